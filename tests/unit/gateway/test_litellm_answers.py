"""gateway-sync against hostile LiteLLM answers (issue #18, item 14 and class 6): it never
follows a redirect with the master key, and no answer shape, type or nesting depth raises
anything but LiteLLMUnavailable, so a pass reports an error and the loop goes on.

The server is tests/support/answers.py on loopback, not LiteLLM: the real proxy cannot be made
to answer these shapes. The client, the sync and the CLI loop are the real ones."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from gateway.apikeys import FileSecrets
from gateway.litellm import LiteLLM, LiteLLMUnavailable
from gateway.merge import Conflict, DesiredModel, Owner, Plan
from gateway.status import RegistrationOutcome, provider_status
from gateway.sync import MANAGED_BY, Syncer
from tests.support.answers import Answer, AnswerServer
from tests.support.hostile_gateway import DEEP, LITELLM_INFO, LITELLM_MODELS, MODEL, OURS
from tests.support.litellm import RUNWAY
from tests.support.wait import wait_until

KEY = "sk-master-answers-0123456789"


@pytest.fixture(scope="module")
def server() -> Iterator[AnswerServer]:
    started = AnswerServer().start()
    yield started
    started.stop()


def syncer(url: str) -> Syncer:
    return Syncer(LiteLLM(url, KEY), FileSecrets([]), confirm_timeout=0)


def test_a_redirect_is_not_followed_and_the_key_stays_home(server: AnswerServer) -> None:
    elsewhere = AnswerServer().start()
    try:
        target = f"{elsewhere.url}/model/info"
        server.answers = {"/model/info": Answer(302, b"", (("Location", target),))}
        server.hits.clear()

        with pytest.raises(LiteLLMUnavailable) as raised:
            syncer(server.url).reconcile(Plan(models=(MODEL,)))

        assert str(raised.value) == (
            f"{server.url}/model/info answered HTTP 302 (a redirect: never followed, it would "
            "carry the master key)"
        )
        assert (server.hits, elsewhere.hits) == ([("GET", "/model/info", True)], [])
    finally:
        elsewhere.stop()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (DEEP, "the answer is not JSON"),
        (b"{" * 100_000, "the answer is not JSON"),
        (b"not json", "the answer is not JSON"),
        (b"[1, 2]", "the answer is not a JSON object"),
        (b'{"data": {"a": 1}}', "no data list in the answer"),
        (b'{"data": "abc"}', "no data list in the answer"),
    ],
    ids=["nested-200000-deep", "unclosed", "not-json", "list", "data-object", "data-string"],
)
def test_an_unusable_model_info_answer_is_one_error(
    server: AnswerServer, body: bytes, message: str
) -> None:
    server.answers = {"/model/info": Answer(200, body)}

    with pytest.raises(LiteLLMUnavailable) as raised:
        syncer(server.url).reconcile(Plan(models=(MODEL,)))

    assert str(raised.value) == f"{server.url}/model/info: {message}"


def test_odd_entries_are_read_as_what_they_can_be(server: AnswerServer) -> None:
    """model_info as a list, litellm_params as a string, model_name a number: foreign or empty."""
    entries = [
        {"model_name": "m", "model_info": ["not", "a", "mapping"], "litellm_params": "str"},
        {"model_name": 7, "model_info": OURS, "litellm_params": "str"},
        "not an entry",
        {"model_name": "m", "model_info": {**OURS, "id": ["x"]}},
    ]
    server.answers = {
        "/model/info": Answer(200, json.dumps({"data": entries}).encode()),
        "/v1/models": Answer(200, json.dumps({"data": [{"id": "m"}, {"id": 3}, "x"]}).encode()),
        "/model/new": Answer(200),
        "/model/delete": Answer(200),
    }

    results = syncer(server.url).reconcile(Plan(models=(MODEL,)))

    # The entry with model_name 7 and our id is ours: replaced (deleted, created) as different.
    assert [(r.outcome, r.message) for r in results] == [
        (
            RegistrationOutcome.CONFLICT,
            'servedName "m" is already registered in LiteLLM by LiteLLM entry (no id) (not '
            "created by runway), which keeps it; this claim is refused",
        )
    ]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(LITELLM_INFO, LITELLM_MODELS, st.sampled_from([200, 400, 500, 302]))
def test_no_answer_shape_escapes_as_anything_but_one_error(
    server: AnswerServer, info: bytes, models: bytes, write_status: int
) -> None:
    server.answers = {
        "/model/info": Answer(200, info),
        "/v1/models": Answer(200, models),
        "/model/new": Answer(write_status),
        "/model/update": Answer(write_status),
        "/model/delete": Answer(write_status),
    }

    try:
        results = syncer(server.url).reconcile(Plan(models=(MODEL,)))
    except LiteLLMUnavailable as err:
        assert str(err).startswith(server.url) and "\n" not in str(err)
        return
    assert [r.served_name for r in results] == ["m"]


def test_the_loop_reports_each_failed_pass_and_keeps_going(
    server: AnswerServer, tmp_path: Path
) -> None:
    server.answers = {"/model/info": Answer(200, DEEP)}
    server.hits.clear()
    (tmp_path / "key").write_text(KEY)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "p.yaml").write_text(yaml.safe_dump(provider()))
    loop = subprocess.Popen(
        [
            str(RUNWAY),
            "gateway-sync",
            "--interval",
            "0.1",
            "--litellm-url",
            server.url,
            "--master-key-file",
            str(tmp_path / "key"),
            "--from",
            str(tmp_path / "o"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(server.hits) >= 3, timeout=60, what="three passes")
    finally:
        loop.send_signal(signal.SIGTERM)
        _, err = loop.communicate(timeout=60)

    failed = f"WARNING gateway.run gateway-sync pass failed: {server.url}/model/info: the answer is not JSON"
    lines = err.splitlines()
    assert (loop.returncode, set(lines)) == (4, {failed})
    assert len(lines) >= 3


def provider() -> dict[str, Any]:
    return {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {"name": "p", "namespace": "gw"},
        "spec": {"baseURL": "https://api.example.com/v1", "models": [{"servedName": "m"}]},
    }


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://x", "must be an http:// or https:// URL with a host"),
        (
            "http://user:pw@litellm:4000",
            "must not carry credentials; the master key comes from $LITELLM_MASTER_KEY or --master-key-file",
        ),
        ("litellm:4000", "must be an http:// or https:// URL with a host"),
    ],
)
def test_a_litellm_url_that_is_not_http_is_refused(
    url: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "key").write_text(KEY)
    code = main(
        [
            "gateway-sync",
            "--once",
            "--litellm-url",
            url,
            "--master-key-file",
            str(tmp_path / "key"),
            "--from",
            str(tmp_path),
        ]
    )

    assert (code, capsys.readouterr().err) == (2, f"runway: --litellm-url: {url!r} {problem}\n")


def test_a_refused_newcomer_gets_a_conflict_status_naming_the_holder(
    server: AnswerServer,
) -> None:
    platform = Owner("ExternalModelProvider", "gw", "platform")
    tenant = Owner("ExternalModelProvider", "gw", "tenant")
    held = DesiredModel("gpt-4o", platform, "https://api.example.com", "gpt-4o")
    wanted = DesiredModel("gpt-4o", tenant, "https://evil.example.com", "gpt-4o")
    entry = {
        "model_name": "gpt-4o",
        "litellm_params": {"model": "openai/gpt-4o", "api_base": "https://api.example.com"},
        "model_info": {
            "id": held.id,
            "runway_managed_by": MANAGED_BY,
            "runway_owner": str(platform),
            "mode": "chat",
        },
    }
    server.answers = {
        "/model/info": Answer(200, json.dumps({"data": [entry]}).encode()),
        "/v1/models": Answer(200, json.dumps({"data": [{"id": "gpt-4o"}]}).encode()),
    }
    contested = Plan(conflicts=(Conflict("gpt-4o", (platform, tenant)),), contested=(held, wanted))

    results = syncer(server.url).reconcile(contested)

    refused = 'servedName "gpt-4o" is already registered in LiteLLM by ExternalModelProvider/gw/platform, which keeps it; this claim is refused'
    assert [(r.owner, r.outcome) for r in results] == [
        (platform, RegistrationOutcome.REGISTERED),
        (tenant, RegistrationOutcome.CONFLICT),
    ]
    status = provider_status(
        [r for r in results if r.owner == tenant], generation=1, previous=None, now="t"
    )
    assert (status["phase"], status["conditions"][1]) == (
        "Conflict",
        {
            "type": "ServedNamesUnique",
            "status": "False",
            "reason": "Conflict",
            "message": refused,
            "lastTransitionTime": "t",
            "observedGeneration": 1,
        },
    )
    assert status["models"] == [
        {
            "servedName": "gpt-4o",
            "id": wanted.id,
            "registered": False,
            "reason": "Conflict",
            "claimants": [str(platform), str(tenant)],
        }
    ]
