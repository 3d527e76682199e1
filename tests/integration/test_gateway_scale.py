"""The gateway sync scales with what changed (issue #46): after a pass has registered N models, a
pass after one change sends LiteLLM a number of requests that does not grow with N (the write
and one lookup of that model, no listing), a pass with nothing to change sends none, and a pass
after a write LiteLLM answered with an error lists LiteLLM again (an unknown state).

Real: LiteLLM's proxy app in its own process on 127.0.0.1 (its authentication, /model/info with
its lookup by litellm_model_id, /v1/models, its router), and the sync's own client, whose
requests are counted as it sends them (tests/support/litellm.py CountingLiteLLM). Substituted:
only the persistence behind /model/new, /model/update and /model/delete
(tests/support/litellm_server.py says why); the upstream is FakeUpstream on loopback."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gateway.apikeys import FileSecrets
from gateway.merge import Plan
from gateway.status import ModelResult
from gateway.sync import LOOKUPS, Syncer
from tests.support.answers import FakeUpstream
from tests.support.litellm import (
    MASTER_KEY,
    PROVIDER_SECRET,
    CountingLiteLLM,
    Proxy,
    providers_plan,
    running_proxy,
)

RELIST = 3600.0  # every pass of a test falls within one interval of its first
ONE_CHANGE = {"GET /model/info?litellm_model_id": 1, "POST /model/update": 1}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    started = FakeUpstream("scale").start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("litellm"), upstream.url) as started:
        yield started


def desired(size: int, base_url: str, *, moved: str | None = None, extra: int = 0) -> Plan:
    """`size` providers of one model each (p0's base URL `moved` when given), and `extra` more."""
    return providers_plan(size + extra, base_url, moved=moved)


def syncer(proxy: Proxy) -> tuple[Syncer, CountingLiteLLM]:
    client = CountingLiteLLM(proxy.url, MASTER_KEY)
    return Syncer(client, FileSecrets([PROVIDER_SECRET]), relist=RELIST), client


def ready(results: Sequence[ModelResult]) -> int:
    return sum(r.registered for r in results)


@pytest.mark.parametrize("size", [LOOKUPS + 4, 4 * LOOKUPS])
def test_a_pass_after_one_change_sends_the_same_few_requests_at_any_size(
    proxy: Proxy, upstream: FakeUpstream, size: int
) -> None:
    sync, client = syncer(proxy)
    assert ready(sync.reconcile(desired(size, upstream.url))) == size
    # Listed once to start and once to confirm the writes (more than LOOKUPS wait).
    assert client.take() == {"GET /model/info": 2, "GET /v1/models": 2, "POST /model/new": size}
    moved = f"{upstream.url}/moved"
    try:
        results = sync.reconcile(desired(size, upstream.url, moved=moved))

        assert (ready(results), client.take()) == (size, ONE_CHANGE)
        entries = proxy.entries()
        assert entries[results[0].id]["litellm_params"]["api_base"] == moved
        assert ready(sync.reconcile(desired(size, upstream.url, moved=moved))) == size
        assert client.take() == {}
        assert ready(sync.reconcile(desired(size - 1, upstream.url, moved=moved))) == size - 1
        assert client.take() == {"POST /model/delete": 1}
        assert f"m{size - 1}" not in proxy.models()
    finally:
        sync.reconcile(Plan())
    assert sorted(proxy.entries()) == ["config-1"]


def test_a_write_answered_with_an_error_makes_the_next_pass_list_again(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """LiteLLM issue 38556: /model/new stored the model and answered 500. The pass confirms it
    by lookup; LiteLLM's state was unknown for a moment, so the next pass lists once."""
    sync, client = syncer(proxy)
    assert ready(sync.reconcile(desired(3, upstream.url))) == 3
    client.take()
    try:
        assert proxy.call("/test/fail-next-new", {})[0] == 200
        assert ready(sync.reconcile(desired(3, upstream.url, extra=1))) == 4
        assert client.take() == {"GET /model/info?litellm_model_id": 1, "POST /model/new": 1}

        assert ready(sync.reconcile(desired(3, upstream.url, extra=1))) == 4
        assert client.take() == {"GET /model/info": 1, "GET /v1/models": 1}
        assert ready(sync.reconcile(desired(3, upstream.url, extra=1))) == 4
        assert client.take() == {}
    finally:
        sync.reconcile(Plan())
    assert sorted(proxy.entries()) == ["config-1"]


def test_an_entry_removed_behind_the_syncs_back_is_restored_by_the_next_listing(
    proxy: Proxy, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Within `relist` seconds a pass trusts what it learned; the next listing (a loop's resync,
    gateway/run.py: one --interval) sees the entry gone and registers it again."""
    sync, client = syncer(proxy)
    assert ready(sync.reconcile(desired(2, upstream.url))) == 2
    try:
        gone = sorted(e for e in proxy.entries() if e != "config-1")[0]
        assert proxy.call("/model/delete", {"id": gone})[0] == 200
        client.take()
        sync.relist = 0.0  # the interval has passed

        assert ready(sync.reconcile(desired(2, upstream.url))) == 2
        assert client.take() == {
            "GET /model/info": 1,
            "GET /model/info?litellm_model_id": 1,
            "GET /v1/models": 1,
            "POST /model/new": 1,
        }
        assert gone in proxy.entries()
    finally:
        sync.reconcile(Plan())
