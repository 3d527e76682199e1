"""The one list-watch loop (kubeio/watch.py) against tests/support/fakeapi.py: what it reports to
its listener round after round (a list, the watch's events, how the round ended, the wait), that
a failed list, a kind not served and 410 Gone each end a round as they should, that `stop` ends
the loop, and the waits between rounds (`pause`): a failure backs off, a normal end does not."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import kubernetes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.model.kinds import GROUP, INFERENCE_PROVIDER_CONFIG_PLURAL, VERSION
from kubeio.shipped import bundled_config_objects
from kubeio.watch import Outcome, Watched, WatchTiming, backoff_of, pause, watch
from tests.support.fakeapi import FakeApiServer, fake_api_server

CONFIGS = Watched(GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL)
QUICK = WatchTiming(watch_seconds=5, list_seconds=5, retry_seconds=0.01, absent_seconds=0.01)
NAMES = sorted(c["metadata"]["name"] for c in bundled_config_objects())
FIRST = bundled_config_objects()[0]["metadata"]["name"]


@dataclass
class Recorder:
    """A kubeio.watch.Listener writing down what it was told; it sets `stop` after `rounds`."""

    stop: threading.Event
    rounds: int
    seen: list[tuple[Any, ...]] = field(default_factory=list)

    def listed(self, items: list[dict[str, Any]]) -> None:
        self.seen.append(("listed", sorted(i["metadata"]["name"] for i in items)))

    def changed(self, event: str, obj: dict[str, Any]) -> None:
        self.seen.append(("changed", event, obj["metadata"]["name"]))

    def ended(self, outcome: Outcome, error: Exception | None) -> None:
        why: tuple[str, Any] | None = None
        if isinstance(error, kubernetes.client.ApiException):  # or a subclass, by status
            why = ("ApiException", error.status)
        elif error is not None:
            why = (type(error).__name__, None)
        self.seen.append(("ended", outcome, why))
        if sum(1 for s in self.seen if s[0] == "ended") >= self.rounds:
            self.stop.set()

    def waited(self) -> None:
        self.seen.append(("waited",))


def run(
    server: FakeApiServer, rounds: int, watched: Watched = CONFIGS, *, clock_step: float = 0.0
) -> list[tuple[Any, ...]]:
    """The loop until `rounds` rounds ended; each reading of its clock moves it by `clock_step`
    (0: every round ends at once, as the fake server's watches do)."""
    stop = threading.Event()
    recorder = Recorder(stop, rounds)
    now = [0.0]

    def clock() -> float:
        now[0] += clock_step
        return now[0]

    watch(server.client, watched, recorder, stop, QUICK, clock=clock)
    return recorder.seen


def test_a_round_lists_then_watches_and_a_watch_ended_at_once_waits_before_the_next() -> None:
    with fake_api_server(on_request=lambda kind, index: None, list_status=lambda i: 200) as server:
        seen = run(server, rounds=2)
        requests = (server.count("list"), server.count("watch"))

    one = [
        ("listed", NAMES),
        ("changed", "MODIFIED", FIRST),
        ("ended", Outcome.ENDED, None),
        ("waited",),
    ]
    assert (seen, requests) == (one + one, (2, 2))


def test_a_watch_that_ran_its_course_lists_again_at_once() -> None:
    with fake_api_server(on_request=lambda kind, index: None, list_status=lambda i: 200) as server:
        seen = run(server, rounds=2, clock_step=1.0)

    one = [("listed", NAMES), ("changed", "MODIFIED", FIRST), ("ended", Outcome.ENDED, None)]
    assert seen == one + one


def test_a_failed_list_ends_its_round_as_failed_and_the_next_round_lists_again() -> None:
    statuses = {0: 500, 1: 403}
    with fake_api_server(
        on_request=lambda kind, index: None, list_status=lambda i: statuses.get(i, 200)
    ) as server:
        seen = run(server, rounds=3)

    assert seen == [
        ("ended", Outcome.FAILED, ("ApiException", 500)),
        ("waited",),
        ("ended", Outcome.FAILED, ("ApiException", 403)),
        ("waited",),
        ("listed", NAMES),
        ("changed", "MODIFIED", FIRST),
        ("ended", Outcome.ENDED, None),
        ("waited",),
    ]


def test_410_gone_is_a_normal_end_and_a_kind_not_served_is_absent() -> None:
    with fake_api_server(
        on_request=lambda kind, index: None, list_status=lambda i: 410 if i == 0 else 200
    ) as server:
        gone = run(server, rounds=1)
        absent = run(server, rounds=1, watched=Watched(GROUP, VERSION, "nothings"))

    assert (gone, absent) == (
        [("ended", Outcome.ENDED, None), ("waited",)],
        [("ended", Outcome.ABSENT, ("ApiException", 404)), ("waited",)],
    )


def test_a_client_that_cannot_be_built_fails_the_round() -> None:
    stop = threading.Event()
    recorder = Recorder(stop, rounds=2)

    def connect() -> kubernetes.client.ApiClient:
        raise kubernetes.config.ConfigException("no kubeconfig")

    watch(connect, CONFIGS, recorder, stop, QUICK)

    failed = ("ended", Outcome.FAILED, ("ConfigException", None))
    assert recorder.seen == [failed, ("waited",), failed, ("waited",)]


def test_stop_ends_the_loop_before_a_round_and_inside_a_watch() -> None:
    stop = threading.Event()
    stop.set()
    with fake_api_server(on_request=lambda kind, index: None, list_status=lambda i: 200) as server:
        idle = Recorder(stop, rounds=1)
        watch(server.client, CONFIGS, idle, stop, QUICK)
        before = (server.count("list"), server.count("watch"))

        during = threading.Event()
        stopping = Recorder(during, rounds=9)
        stopping.listed = lambda items: during.set()  # type: ignore[method-assign]
        watch(server.client, CONFIGS, stopping, during, QUICK, clock=lambda: 0.0)

    assert (idle.seen, before) == ([], (0, 0))
    assert stopping.seen == [("ended", Outcome.ENDED, None), ("waited",)]


TIMING = WatchTiming(retry_seconds=2.0, retry_most=16.0, absent_seconds=30.0)


def test_failures_in_a_row_double_the_wait_up_to_the_most_and_a_normal_end_forgets() -> None:
    backoff = backoff_of(TIMING)
    outcomes = [
        (Outcome.FAILED, 0.1),
        (Outcome.FAILED, 0.1),
        (Outcome.ENDED, 0.5),  # a watch the server ended at once counts as a failure
        (Outcome.FAILED, 0.1),
        (Outcome.FAILED, 0.1),
        (Outcome.ENDED, 300.0),  # a watch that ran its course: list again at once
        (Outcome.FAILED, 0.1),
        (Outcome.ABSENT, 0.1),  # no CRD: its own wait, and the count starts again
        (Outcome.FAILED, 0.1),
    ]

    waits = [pause(outcome, ran, backoff, TIMING) for outcome, ran in outcomes]

    assert waits == [2.0, 4.0, 8.0, 16.0, 16.0, None, 2.0, 30.0, 2.0]


def test_without_a_most_every_failure_waits_the_retry_seconds() -> None:
    timing = WatchTiming(retry_seconds=2.0)
    backoff = backoff_of(timing)

    waits = [pause(Outcome.FAILED, 0.0, backoff, timing) for _ in range(5)]

    assert waits == [2.0] * 5


@given(st.lists(st.sampled_from([Outcome.FAILED, Outcome.ENDED]), min_size=1, max_size=30))
def test_jitter_stretches_each_wait_by_at_most_its_fraction(outcomes: list[Outcome]) -> None:
    timing = WatchTiming(retry_seconds=1.0, retry_most=8.0, jitter=0.5)
    backoff, plain = backoff_of(timing), backoff_of(WatchTiming(retry_seconds=1.0, retry_most=8.0))
    plain_timing = WatchTiming(retry_seconds=1.0, retry_most=8.0)

    for outcome in outcomes:
        wait = pause(outcome, 0.0, backoff, timing)
        base = pause(outcome, 0.0, plain, plain_timing)
        assert wait is not None and base is not None
        assert base <= wait <= base * 1.5


@pytest.mark.parametrize("status", [500, 403], ids=["server-error", "forbidden"])
def test_a_failed_round_reports_the_status_it_failed_with(status: int) -> None:
    with fake_api_server(
        on_request=lambda kind, index: None, list_status=lambda i: status if i == 0 else 200
    ) as server:
        seen = run(server, rounds=1)

    assert seen == [("ended", Outcome.FAILED, ("ApiException", status)), ("waited",)]
