"""One ExternalModelProvider's status never delays another's (issue #40, item 8 and class 4):
whatever names and how many of them tenants' providers contend for, each status stays small
(messages cut, names counted past a few), the pass logs one line per claimant rather than one per
name, and a status write the API server refuses is logged, backed off for that object only, and
never stops the other writes or fails the pass."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from http import HTTPStatus

import kubernetes
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.schema.crds import MODELS
from gateway.apikeys import FileSecrets
from gateway.cluster import Writes, statuses, write_statuses
from gateway.litellm import LiteLLM
from gateway.logs import MAX_MESSAGE
from gateway.merge import Owner, owner_of
from gateway.run import PlanSettings, plan_objects
from gateway.status import MAX_MODELS
from gateway.sync import Syncer
from kubeio.backoff import Backoff
from tests.support.answers import Answer, AnswerServer, Request
from tests.support.builders import external_model_provider

KEY = "sk-master-isolation-0123456789"
# A status this size is far from etcd's 1.5 MiB object limit, with the spec beside it.
STATUS_BUDGET = 256 * 2**10
EMPTY = json.dumps({"data": []}).encode()


@pytest.fixture(scope="module")
def litellm() -> Iterator[AnswerServer]:
    started = AnswerServer(
        answers={"/model/info": Answer(200, EMPTY), "/v1/models": Answer(200, EMPTY)}
    ).start()
    yield started
    started.stop()


def _names(count: int, length: int, seed: int) -> list[str]:
    return [f"m{seed}-{i:05d}-".ljust(length, "x") for i in range(count)]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(min_value=1, max_value=MODELS),  # the most a provider may offer (its CRD)
    length=st.integers(min_value=12, max_value=253),
    tenants=st.integers(min_value=2, max_value=4),
)
def test_every_status_stays_small_and_the_log_short_whatever_tenants_contend_for(
    litellm: AnswerServer,
    caplog: pytest.LogCaptureFixture,
    count: int,
    length: int,
    tenants: int,
) -> None:
    names = _names(count, length, 0)
    models = [{"servedName": n} for n in names]
    providers = [
        external_model_provider(f"t{i}", credentialsSecretRef=None, models=models)
        for i in range(tenants)
    ]
    plan = plan_objects(providers, PlanSettings())
    syncer = Syncer(LiteLLM(litellm.url, KEY), FileSecrets([]), confirm_timeout=0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gateway"):
        results = syncer.reconcile(plan)

    new = statuses(plan, results, providers, now="T")

    assert sorted(new) == sorted(owner_of(p) for p in providers)
    for status in new.values():
        messages = [status["message"], *(c["message"] for c in status["conditions"])]
        assert max(len(m) for m in messages) <= MAX_MESSAGE
        assert len(status["models"]) == min(count, MAX_MODELS)
        assert len(json.dumps(status)) <= STATUS_BUDGET
    # One conflict line per claimant (every name contended by the same rivals), not per name.
    assert len(caplog.records) == tenants


OWNERS = [Owner("ExternalModelProvider", "gw", f"p{i}") for i in range(6)]
REFUSALS = st.sampled_from([400, 403, 409, 413, 422, 500, 503])


@pytest.fixture
def api_server() -> Iterator[AnswerServer]:
    started = AnswerServer().start()
    yield started
    started.stop()


def _api(server: AnswerServer) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    configuration.host = server.url
    return kubernetes.client.ApiClient(configuration)


def _provider(owner: Owner) -> dict[str, object]:
    return external_model_provider(owner.name, owner.namespace)


def _status(owner: Owner) -> dict[str, object]:
    return {"phase": "Ready", "message": f"{owner.name} ok"}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(refused=st.dictionaries(st.sampled_from(OWNERS), REFUSALS, max_size=len(OWNERS)))
def test_a_refused_status_write_stops_no_other_and_backs_off_alone(
    api_server: AnswerServer, caplog: pytest.LogCaptureFixture, refused: dict[Owner, int]
) -> None:
    by_name = {o.name: code for o, code in refused.items()}

    def respond(request: Request) -> Answer:
        name = request.path.split("/")[-2]
        return Answer(
            by_name.get(name, 200), b'{"message": "refused"}' if name in by_name else b"{}"
        )

    api_server.respond = respond
    api_server.hits.clear()
    now = [100.0]
    backoff = Backoff(clock=lambda: now[0])
    providers = [_provider(o) for o in OWNERS]
    new = {o: _status(o) for o in OWNERS}
    api = _api(api_server)
    caplog.clear()

    with caplog.at_level(logging.INFO, logger="gateway.cluster"):
        first = write_statuses(api, new, providers, backoff)
    again = write_statuses(api, new, providers, backoff)  # within every backoff
    now[0] += 1.0
    later = write_statuses(api, new, providers, backoff)  # the first backoff (1 s) is over

    others = tuple(o for o in OWNERS if o not in refused)
    failed = tuple(o for o in OWNERS if o in refused)
    assert first == Writes(written=others, refused=failed)
    assert again == Writes(written=others, deferred=failed)
    assert later == Writes(written=others, refused=failed)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"gateway-sync status {o}: the API server refused the write ({refused[o]} "
        f"{HTTPStatus(refused[o]).phrase}, 1 in a row); the other objects go on, this one is tried again "
        "in 1 s"
        for o in failed
    ]
    patched = [path for method, path, _ in api_server.hits if method == "PATCH"]
    assert len(patched) == 3 * len(others) + 2 * len(failed)


def test_the_next_pass_comes_when_the_first_refused_status_is_due() -> None:
    now = [100.0]
    backoff = Backoff(clock=lambda: now[0])
    a, b = OWNERS[0], OWNERS[1]

    idle = backoff.next_in()
    backoff.fail(a)
    backoff.fail(a)  # 2 s from now
    backoff.fail(b)  # 1 s from now
    first = backoff.next_in()
    now[0] += 0.5
    late = backoff.next_in()
    now[0] += 1.0
    due = backoff.next_in()
    backoff.succeed(a)
    backoff.succeed(b)

    assert (idle, first, late, due, backoff.next_in()) == (None, 1.0, 0.5, 0.0, None)
