"""Readiness of a webhook that watches provider configs (webhook/source.py): a watch that ends
normally never makes it unready; data not known current for longer than the bound does.

The source talks to tests/support/fakeapi.py (why not a real API server: see there). /readyz is
read through the app at the moment each list or watch request reaches that server, that is
while the source is between two watches. Where the bound matters the clock is the test's, so
"longer than the bound" is exact and nothing waits for time to pass.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from kubeio.client import api_client
from tests.support.fakeapi import FakeApiServer, fake_api_server
from tests.support.wait import wait_until
from webhook.app import create_app
from webhook.settings import Settings
from webhook.source import ClusterSource

CYCLES = 10
STALE = 5.0
FAILED = 500
NOT_READY = 503


@dataclass
class ManualClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recorder:
    """What /readyz answered at each request the fake API server received; `then` runs after
    each reading (the tests move their clock there)."""

    then: Callable[[str, int], None] = lambda kind, index: None
    seen: list[tuple[str, int]] = field(default_factory=list)
    client: FlaskClient | None = None
    app_built: threading.Event = field(default_factory=threading.Event)

    def __call__(self, kind: str, index: int) -> None:
        self.app_built.wait(10)
        assert self.client is not None
        self.seen.append((kind, self.client.get("/readyz").status_code))
        self.then(kind, index)


@contextlib.contextmanager
def watching(
    recorder: Recorder, list_status: Callable[[int], int], clock: Callable[[], float]
) -> Iterator[FakeApiServer]:
    """The fake API server answering lists with `list_status`, and the app over a source that
    watches it with `clock` (the recorder reads its /readyz); the source stops on leaving."""
    with fake_api_server(on_request=recorder, list_status=list_status) as api:
        source = ClusterSource(api.client, retry_seconds=0.01, stale_seconds=STALE, clock=clock)
        recorder.client = create_app(Settings(), source=source).test_client()
        recorder.app_built.set()
        try:
            yield api
        finally:
            source.stop()


def ready_gauge(client: FlaskClient) -> float:
    families = text_string_to_metric_families(client.get("/metrics").get_data(as_text=True))
    (value,) = [s.value for f in families if f.name == "runway_webhook_ready" for s in f.samples]
    return value


def test_normal_watch_restarts_never_make_it_unready() -> None:
    recorder = Recorder()
    with watching(recorder, lambda index: 200, time.monotonic) as api:
        wait_until(lambda: api.count("list") > CYCLES, timeout=60, what="watch cycles")

    # Not ready before the first list; ready at every later list and watch.
    cycle = [("watch", 200), ("list", 200)]
    assert recorder.seen[: 2 * CYCLES + 1] == [("list", NOT_READY), *cycle * CYCLES]


def test_lists_failing_longer_than_the_bound_make_it_unready_until_one_succeeds() -> None:
    clock = ManualClock()
    # List 0 succeeds, lists 1-6 fail (a second passes during each), list 7 succeeds again.
    statuses = [200, FAILED, FAILED, FAILED, FAILED, FAILED, FAILED, 200]
    recovered = threading.Event()

    def then(kind: str, index: int) -> None:
        if kind == "list" and statuses[min(index, len(statuses) - 1)] == FAILED:
            clock.now += 1.0
        if kind == "watch" and index == 1:
            recovered.set()

    recorder = Recorder(then=then)
    with watching(recorder, lambda index: statuses[min(index, len(statuses) - 1)], clock):
        wait_until(recovered.is_set, timeout=60, what="the watch to recover")
        assert recorder.client is not None
        gauge_after_recovery = ready_gauge(recorder.client)

    # The data was last current at t=0 (list 0 and its watch). At list i (i = 1..7) the clock
    # reads i-1: ready up to t=5 (the bound), not ready at t=6, ready again once list 7 worked.
    assert recorder.seen[:10] == [
        ("list", NOT_READY),
        ("watch", 200),
        ("list", 200),  # t=0
        ("list", 200),  # t=1
        ("list", 200),  # t=2
        ("list", 200),  # t=3
        ("list", 200),  # t=4
        ("list", 200),  # t=5
        ("list", NOT_READY),  # t=6: failing for longer than the bound
        ("watch", 200),  # list 7 succeeded
    ]
    assert gauge_after_recovery == 1.0


def test_the_ready_gauge_follows_readiness() -> None:
    clock = ManualClock()
    stale = threading.Event()

    def then(kind: str, index: int) -> None:
        if kind == "list" and index >= 1:
            clock.now += STALE + 1  # every failed list takes longer than the bound
            if index >= 2:
                stale.set()

    recorder = Recorder(then=then)
    with watching(recorder, lambda index: 200 if index == 0 else FAILED, clock):
        wait_until(stale.is_set, timeout=60, what="lists to fail past the bound")
        assert recorder.client is not None
        gauge = ready_gauge(recorder.client)

    assert gauge == 0.0


# A script of lists: whether each succeeds, and how much time passes while it is answered.
STEPS = st.lists(
    st.tuples(st.booleans(), st.integers(0, 24).map(lambda halves: halves / 2)),
    min_size=1,
    max_size=8,
)


def expected_readiness(steps: list[tuple[bool, float]]) -> list[tuple[str, int]]:
    """The documented rule: ready once a list succeeded, while the data was current at most
    STALE seconds ago (at a list's success and at its watch's end)."""
    now, current_at, loaded = 0.0, 0.0, False
    seen: list[tuple[str, int]] = []
    for ok, passes in steps:
        seen.append(("list", 200 if loaded and now - current_at <= STALE else NOT_READY))
        now += passes
        if ok:
            loaded, current_at = True, now
            seen.append(("watch", 200))
    return seen


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_readiness_follows_the_rule_for_any_script_of_lists(
    steps: list[tuple[bool, float]],
) -> None:
    clock = ManualClock()
    done = threading.Event()

    def then(kind: str, index: int) -> None:
        if kind == "list" and index < len(steps):
            clock.now += steps[index][1]
        if kind == "list" and index >= len(steps) - 1:
            done.set()

    def status(index: int) -> int:
        return 200 if index < len(steps) and steps[index][0] else FAILED

    recorder = Recorder(then=then)
    with watching(recorder, status, clock):
        wait_until(done.is_set, timeout=60, what="the script of lists")
        # The last step's watch (if it succeeded) is read before the source is stopped.
        wait_until(
            lambda: len(recorder.seen) >= len(expected_readiness(steps)),
            timeout=60,
            what="the last watch",
        )

    assert recorder.seen[: len(expected_readiness(steps))] == expected_readiness(steps)


def test_a_kubeconfig_that_cannot_be_loaded_keeps_it_unready_and_retrying(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A kubeconfig naming a CA file that is not there (found installing the Helm chart): the
    watch thread once died of the traceback and never tried again."""
    config = tmp_path / "kubeconfig"
    missing = tmp_path / "missing-ca.crt"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://127.0.0.1:1",
                            "certificate-authority": str(missing),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    tries: list[int] = []

    def factory() -> Any:
        tries.append(1)
        return api_client(str(config))

    source = ClusterSource(factory, retry_seconds=0.01, stale_seconds=STALE)
    client = create_app(Settings(), source=source).test_client()
    with caplog.at_level(logging.INFO, logger="webhook.source"):
        source.start()
        try:
            wait_until(lambda: len(tries) >= 3, timeout=10, what="three tries")
            status = client.get("/readyz").status_code
        finally:
            source.stop()

    # Only this source's lines: a source another test started may still be logging.
    ours = [r.getMessage() for r in caplog.records if str(missing) in r.getMessage()]
    assert status == NOT_READY
    assert set(ours) == {
        "provider config watch cannot build its client; retrying: "
        f"kubeconfig {config}, its current context: File does not exist: {missing}"
    }
    assert len(ours) >= 3
    assert not [r for r in caplog.records if r.exc_info]
