"""The status controller's watch of a kind (controller/watching.py over kubeio.watch) against
tests/support/fakeapi.py: the provider configs reach the cache, a failed list counts one restart
of that kind's watch (runway_status_watch_restarts_total) and a normal end counts none, and a
change of what selection reads queues every ModelDeployment while a status write does not; and
the controller's watch (kubeio.watch with resume) goes on after a normal end without a list."""

from __future__ import annotations

import logging
import threading
from typing import Any

from controller.cache import Cache, ConfigMarks
from controller.kinds import PROVIDER_CONFIGS
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from controller.queue import Queue
from controller.watching import KindWatch, WatchParts
from kubeio.repeats import Repeats
from kubeio.shipped import bundled_config_objects
from kubeio.watch import Outcome, WatchTiming, watch
from tests.support.fakeapi import fake_api_server
from tests.support.wait import wait_until

NAMES = sorted(c["metadata"]["name"] for c in bundled_config_objects())


def test_the_config_watch_fills_the_cache_and_only_a_failed_round_counts_a_restart() -> None:
    metrics = Metrics()
    stop = threading.Event()
    with fake_api_server(
        on_request=lambda kind, index: None, list_status=lambda i: 500 if i == 0 else 200
    ) as server:
        observer = Observer(
            server.client(), ObserveSettings(retry_seconds=0.01), metrics, lambda: True
        )
        thread = threading.Thread(target=observer.watch, args=(PROVIDER_CONFIGS, stop), daemon=True)
        thread.start()
        wait_until(
            lambda: server.count("watch") >= 2,
            what="two rounds of the provider config watch after the failed list",
        )
        stop.set()
        thread.join(timeout=10)

    cached = sorted(c["metadata"]["name"] for c in observer.cache.of_kind(PROVIDER_CONFIGS.kind))
    assert (cached, metrics.watch_restarts, thread.is_alive()) == (
        NAMES,
        {"InferenceProviderConfig": 1},
        False,
    )


def _model(name: str) -> dict[str, Any]:
    return {"kind": "ModelDeployment", "metadata": {"name": name, "namespace": "ns"}}


def test_a_config_change_queues_every_model_and_a_status_write_does_not() -> None:
    cache, queue = Cache(), Queue()
    cache.replace("ModelDeployment", [_model("a"), _model("b")])
    marks = ConfigMarks()
    parts = WatchParts(cache, queue, marks, Metrics(), Repeats(logging.getLogger("watching-test")))
    watch = KindWatch(PROVIDER_CONFIGS, parts)
    config = {"metadata": {"name": "vllm", "generation": 1, "annotations": {"a": "1"}}}

    watch.listed([config])
    first = _drain(queue)
    watch.changed("MODIFIED", {**config, "status": {"ready": True}})
    status_write = _drain(queue)
    watch.changed("MODIFIED", {"metadata": {**config["metadata"], "generation": 2}})
    spec_change = _drain(queue)
    watch.ended(Outcome.ENDED, None)

    assert (first, status_write, spec_change, marks.changes) == (
        [("ns", "a"), ("ns", "b")],
        [],
        [("ns", "a"), ("ns", "b")],
        2,
    )


def _drain(queue: Queue) -> list[tuple[str, str]]:
    taken = []
    while (key := queue.take(timeout=0)) is not None:
        taken.append(key)
        queue.done(key)
    return taken


class Rounds:
    """A kubeio.watch.Listener counting lists and events; it sets `stop` after `rounds`."""

    def __init__(self, stop: threading.Event, rounds: int) -> None:
        self.stop, self.rounds = stop, rounds
        self.seen: list[str] = []

    def listed(self, items: list[dict[str, Any]]) -> None:
        self.seen.append(f"listed {len(items)}")

    def changed(self, event: str, obj: dict[str, Any]) -> None:
        self.seen.append(event)

    def ended(self, outcome: Outcome, error: Exception | None) -> None:
        self.seen.append(str(outcome))
        if self.seen.count(str(outcome)) >= self.rounds:
            self.stop.set()

    def waited(self) -> None:
        return None


def test_the_controllers_watch_goes_on_after_a_normal_end_without_listing_again() -> None:
    stop = threading.Event()
    rounds = Rounds(stop, 3)
    ticks = iter(range(1_000))
    timing = WatchTiming(watch_seconds=5, list_seconds=5, retry_seconds=0.01, resume=True)
    with fake_api_server(on_request=lambda kind, index: None, list_status=lambda i: 200) as server:
        watch(
            server.client,
            PROVIDER_CONFIGS.watched(None),
            rounds,
            stop,
            timing,
            clock=lambda: float(next(ticks)),
        )
        requests = (server.count("list"), server.count("watch"))

    assert (rounds.seen, requests) == (
        [f"listed {len(NAMES)}", *["MODIFIED", "ended"] * 3],
        (1, 3),
    )
