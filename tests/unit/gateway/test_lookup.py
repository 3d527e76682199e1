"""Confirming one entry by id (GET /model/info?litellm_model_id=ID, issue #46) against hostile
and odd LiteLLM answers, and the View a pass keeps of LiteLLM.

The server is tests/support/answers.py on loopback, not LiteLLM: the real proxy cannot be made
to answer these shapes (tests/integration/test_gateway_scale.py runs the lookup against it).
The client and the sync are the real ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.apikeys import FileSecrets
from gateway.litellm import LiteLLM, LiteLLMUnavailable, NoLookup
from gateway.merge import Owner, Plan
from gateway.status import RegistrationOutcome
from gateway.sync import Syncer, entry
from gateway.view import View, Visible
from tests.support.answers import Answer, AnswerServer, Request
from tests.support.hostile_gateway import ENTRY, JSON, LITELLM_INFO, MODEL

KEY = "sk-master-lookup-0123456789"
LISTED = json.dumps({"data": [entry(MODEL, None)]}).encode()
PUBLIC = json.dumps({"data": [{"id": "m"}]}).encode()
LOOKUP = "/model/info?litellm_model_id=runway%3Aemp%3Agw%3Ap%3Am"


@pytest.fixture(scope="module")
def server() -> Iterator[AnswerServer]:
    started = AnswerServer().start()
    yield started
    started.stop()


def test_the_lookup_asks_for_the_id_and_reads_the_one_entry(server: AnswerServer) -> None:
    server.answers = {LOOKUP: Answer(200, LISTED)}
    server.hits.clear()

    found = LiteLLM(server.url, KEY).deployment(MODEL.id)

    assert found == {
        "model_name": "m",
        "litellm_params": {"model": "openai/m", "api_base": "https://api.example.com"},
        "model_info": {
            "id": MODEL.id,
            "mode": "chat",
            "runway_managed_by": "runway-gateway-sync",
            "runway_owner": str(MODEL.owner),
        },
    }
    assert server.hits == [("GET", LOOKUP, True)]


def test_an_unknown_id_is_none_and_a_missing_route_says_so(server: AnswerServer) -> None:
    client = LiteLLM(server.url, KEY)
    server.answers = {LOOKUP: Answer(400, b'{"detail": {"error": "Model id = x not found"}}')}
    assert client.deployment(MODEL.id) is None

    server.answers = {}
    with pytest.raises(NoLookup) as raised:
        client.deployment(MODEL.id)
    assert str(raised.value) == f"{server.url}{LOOKUP} answered HTTP 404"


def test_a_litellm_that_ignores_the_parameter_is_searched_for_the_id(
    server: AnswerServer,
) -> None:
    other = {**entry(MODEL, None), "model_info": {"id": "config-1"}}
    listing = json.dumps({"data": [other, entry(MODEL, None)]}).encode()
    server.answers = {LOOKUP: Answer(200, listing)}

    found = LiteLLM(server.url, KEY).deployment(MODEL.id)

    assert found is not None and found["model_info"]["id"] == MODEL.id
    server.answers = {LOOKUP: Answer(200, json.dumps({"data": [other]}).encode())}
    assert LiteLLM(server.url, KEY).deployment(MODEL.id) is None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        LITELLM_INFO,
        st.lists(st.one_of(ENTRY, JSON), max_size=4).map(
            lambda d: json.dumps({"data": [*d, entry(MODEL, None)]}).encode()
        ),
    ),
    st.sampled_from([200, 201, 302, 400, 401, 404, 500]),
)
def test_no_lookup_answer_escapes_as_anything_but_one_error(
    server: AnswerServer, body: bytes, status: int
) -> None:
    server.answers = {LOOKUP: Answer(status, body)}

    try:
        found = LiteLLM(server.url, KEY).deployment(MODEL.id)
    except LiteLLMUnavailable as err:
        assert str(err).startswith(server.url) and "\n" not in str(err)
        assert status not in (200, 201, 400) or "answer" in str(err)
        return
    assert status in (200, 201, 400)
    assert found is None or found["model_info"]["id"] == MODEL.id


def test_without_the_lookup_a_pass_confirms_in_the_listing(server: AnswerServer) -> None:
    """A 404 for the lookup (no such route in front of this LiteLLM): the listing tells."""
    server.answers = {
        "/model/info": Answer(200, LISTED),
        "/v1/models": Answer(200, PUBLIC),
        "/model/update": Answer(200),
    }
    server.hits.clear()
    sync = Syncer(LiteLLM(server.url, KEY), FileSecrets([]), confirm_timeout=0, relist=60)

    results = sync.reconcile(Plan(models=(MODEL,)))

    assert [r.outcome for r in results] == [RegistrationOutcome.REGISTERED]
    assert [path for _, path, _ in server.hits] == [
        "/model/info",
        "/v1/models",
        "/model/update",  # a new process sends every key once
        LOOKUP,
        "/model/info",
        "/v1/models",
    ]
    server.hits.clear()
    assert [r.outcome for r in sync.reconcile(Plan(models=(MODEL,)))] == [
        RegistrationOutcome.REGISTERED
    ]
    assert server.hits == []  # within relist seconds: the View of the last pass


def test_a_pass_that_raises_leaves_no_view(server: AnswerServer) -> None:
    def respond(request: Request) -> Answer:
        if request.path == "/model/update":
            return Answer(200, b"{}")
        if request.path.startswith("/model/info?"):
            return Answer(200, b"[" * 100_000)
        return {"/model/info": Answer(200, LISTED), "/v1/models": Answer(200, PUBLIC)}[request.path]

    server.respond = respond
    try:
        sync = Syncer(LiteLLM(server.url, KEY), FileSecrets([]), confirm_timeout=0, relist=60)
        with pytest.raises(LiteLLMUnavailable):
            sync.reconcile(Plan(models=(MODEL,)))
        assert sync.view is None
    finally:
        server.respond = None


def body(name: str, mid: str, base: str = "https://a") -> dict[str, Any]:
    return {
        "model_name": name,
        "litellm_params": {"model": f"openai/{name}", "api_base": base, "api_key": "sk-secret"},
        "model_info": {
            "id": mid,
            "runway_managed_by": "runway-gateway-sync",
            "runway_owner": f"ExternalModelProvider/gw/{name}",
        },
    }


def test_a_view_after_writes_and_deletes() -> None:
    foreign = {"model_name": "shared", "litellm_params": {}, "model_info": {"id": "config-1"}}
    listed = [foreign, body("a", "runway:1"), body("shared", "runway:2")]
    view = View.listed(listed, {"a", "shared", "alias"}, at=5.0)

    after = view.after(["runway:1", "runway:2", "runway:unknown"], [body("b", "runway:3")])

    assert sorted(after.ours) == ["runway:3"]
    assert after.public == {"shared", "b"}  # "shared" is still config-1's; no entry is "alias"
    assert after.foreign_ids == {"config-1"}
    assert after.listed_at == 5.0
    assert "api_key" not in after.ours["runway:3"]["litellm_params"]
    assert Visible.of(after.ours["runway:3"]) == Visible.of(body("b", "runway:3"))
    assert "runway:3" not in view.ours  # a View is never changed in place
    assert [(r.served_name, r.owner) for r in after.registrations()] == [
        ("shared", None),
        ("b", Owner("ExternalModelProvider", "gw", "b")),
    ]
