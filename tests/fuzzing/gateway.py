"""`make fuzz` area "gateway" (issue #18, classes 6 and 7): tenants cannot take each other's
names, hostile LiteLLM answers never escape as a traceback, and credentials never come back.

Per run, `examples` cases split over four classes:
* litellm-answers: a Syncer pass against tests/support/answers.py on 127.0.0.1 answering
  generated shapes; anything but results or one LiteLLMUnavailable line is a failure;
* served-names: generated names with pattern characters are refused by both admissions, and a
  generated claims/registrations set never hands an established name to a newcomer;
* destinations: every resolver spelling of an internal IPv4 address is refused as a base URL;
* credentials: a credential in any string position or key is denied and absent from the denial.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.admission.configs import check_external_provider
from core.admission.pipeline import admit
from core.model.servednames import is_literal
from core.selection.configs import ProviderRegistry
from gateway.apikeys import FileSecrets
from gateway.litellm import LiteLLM, LiteLLMUnavailable
from gateway.merge import Owner, Plan, Registration, plan, settle
from gateway.sync import Syncer
from tests.fuzzing import Report
from tests.support.answers import Answer, AnswerServer
from tests.support.builders import external_model_provider, model_deployment, shipped_registry
from tests.support.hostile_gateway import (
    CREDENTIALS,
    LITELLM_INFO,
    LITELLM_MODELS,
    MODEL,
    POSITIONS,
    plant,
    rich,
)

KEY = "sk-master-fuzz-0123456789"
PATTERNS = st.text(alphabet="ab/*?[]{}^$|()+.\\ ", min_size=1, max_size=12)
INTERNAL = st.one_of(
    *(
        st.ip_addresses(v=4, network=n)
        for n in ("169.254.0.0/16", "127.0.0.0/8", "10.0.0.0/8", "192.168.0.0/16", "100.64.0.0/10")
    )
)
OWNERS = st.sampled_from([Owner("ExternalModelProvider", "gw", n) for n in "pqr"])


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    if count <= 0:
        return
    settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(each))()


def run(examples: int) -> Report:
    report = Report("gateway")
    share = max(examples // 4, 1)
    registry = shipped_registry()
    server = AnswerServer().start()
    try:
        _answers(server, share, report)
    finally:
        server.stop()
    _names(registry, share, report)
    _destinations(share, report)
    _credentials(registry, share, report)
    return report


def _answers(server: AnswerServer, count: int, report: Report) -> None:
    syncer = Syncer(LiteLLM(server.url, KEY), FileSecrets([]), confirm_timeout=0)

    def each(case: tuple[bytes, bytes, int]) -> None:
        info, models, status = case
        server.answers = {
            "/model/info": Answer(200, info),
            "/v1/models": Answer(200, models),
            **{r: Answer(status) for r in ("/model/new", "/model/update", "/model/delete")},
        }
        report.cases += 1
        try:
            syncer.reconcile(Plan(models=(MODEL,)))
        except LiteLLMUnavailable as err:
            if "\n" in str(err):
                report.failures.append(f"litellm-answers: a multi-line error ({len(info)} bytes)")
        except Exception as err:  # the failure being counted: any other exception escapes
            report.failures.append(f"litellm-answers: {type(err).__name__} escaped")

    _drive(st.tuples(LITELLM_INFO, LITELLM_MODELS, st.sampled_from([200, 500, 302])), count, each)


def _names(registry: ProviderRegistry, count: int, report: Report) -> None:
    def each(case: tuple[str, list[tuple[Owner, str]], list[tuple[Owner, str]]]) -> None:
        name, claims, registered = case
        report.cases += 1
        emp = external_model_provider(models=[{"servedName": name}])
        md = model_deployment(gpu=1, provider="vllm", model={"id": "org/m", "servedName": name})
        if not is_literal(name) and (
            not check_external_provider(emp) or admit(md, registry=registry).allowed
        ):
            report.failures.append(f"served-names: pattern {name!r} admitted")
        by_owner: dict[Owner, list[str]] = {}
        for owner, served in claims:
            by_owner.setdefault(owner, []).append(served)
        objects = [
            external_model_provider(o.name, "gw", models=[{"servedName": s} for s in names])
            for o, names in sorted(by_owner.items())
        ]
        result = plan([], objects, registry=registry, pins=None)  # type: ignore[arg-type]  # EMPs only: nothing is rendered
        settled = settle(
            result, [Registration(s, o, f"id-{i}") for i, (o, s) in enumerate(registered)]
        )
        desired = {(m.served_name, m.owner) for m in settled.models}
        for owner, served in set(registered):
            holders = {o for o, s in registered if s == served and o in by_owner}
            if (
                holders == {owner}
                and by_owner.get(owner, []).count(served) == 1
                and ((served, owner) not in desired)
            ):
                report.failures.append(f"served-names: established {owner} lost {served!r}")

    names = st.lists(st.tuples(OWNERS, st.sampled_from("abc")), max_size=8)
    _drive(
        st.tuples(PATTERNS, names, st.lists(st.tuples(OWNERS, st.sampled_from("abc")), max_size=4)),
        count,
        each,
    )


def _destinations(count: int, report: Report) -> None:
    def each(case: tuple[ipaddress.IPv4Address, int]) -> None:
        address, which = case
        value = int(address)
        octets = [int(o) for o in str(address).split(".")]
        spellings = [
            str(address),
            str(value),
            hex(value),
            ".".join(f"0{o:o}" for o in octets),
            ".".join(hex(o) for o in octets),
            f"{octets[0]}.{value & 0xFFFFFF}",
            f"[::ffff:{address}]",
            f"[64:ff9b::{address}]",
            f"{address}.",
        ]
        host = spellings[which % len(spellings)]
        report.cases += 1
        if not check_external_provider(external_model_provider(baseURL=f"http://{host}/v1")):
            report.failures.append(f"destinations: http://{host}/v1 admitted")

    _drive(st.tuples(INTERNAL, st.integers(0, 100)), count, each)


def _credentials(registry: ProviderRegistry, count: int, report: Report) -> None:
    def each(case: tuple[str, tuple[tuple[Any, ...], bool]]) -> None:
        token, where = case
        obj = rich()
        plant(obj, where, token)
        report.cases += 1
        admission = admit(obj, registry=registry)
        said = " ".join([*(str(e) for e in admission.errors), *admission.warnings])
        if admission.allowed or token in said:
            kind = "admitted" if admission.allowed else "repeated in the denial"
            report.failures.append(f"credentials: a credential at {where} {kind}")

    _drive(st.tuples(CREDENTIALS, st.sampled_from(POSITIONS)), count, each)
