"""Issue #40, item 7 (class 4): one object's refused status write never delays another's.

The worker retries a ModelDeployment whose write fails after that object's own backoff (0.5 s,
then doubling) and goes on with the next key at once. Before, each failure put the key at the
back of the queue and slept 2 s for everyone: with six refused models, an unrelated model
waited 11.8-13.5 s. The stand-in API server refuses the chosen models' writes (422)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from controller.kinds import MODEL_DEPLOYMENTS
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from core.admission.pipeline import admit
from tests.support.builders import model_deployment, shipped_registry
from tests.support.healthapi import Refusals, health_api
from tests.support.wait import wait_until

REFUSED = [f"bad{i}" for i in range(6)]
FIRST = 0.5


def stored(name: str) -> dict[str, Any]:
    admission = admit(
        model_deployment(name, "ns", provider="vllm", engine="vllm", gpu=1),
        registry=shipped_registry(),
    )
    obj = dict(admission.obj)
    obj["metadata"] = {**obj["metadata"], "generation": 1, "resourceVersion": "1"}
    return obj


@pytest.fixture
def worker() -> Iterator[tuple[Observer, Refusals]]:
    refusals = Refusals(writes=frozenset(REFUSED))
    stop = threading.Event()
    with health_api(refusals) as server:
        api = server.client()
        observer = Observer(
            api,
            ObserveSettings(backoff_seconds=FIRST, backoff_most=4.0),
            Metrics(),
            lambda: True,
        )
        observer.cache.replace(
            MODEL_DEPLOYMENTS.kind, [stored(n) for n in [*REFUSED, "good", "late"]]
        )
        thread = threading.Thread(target=observer.work, args=(stop,), daemon=True)
        thread.start()
        try:
            yield observer, refusals
        finally:
            stop.set()
            thread.join(timeout=10)
            api.close()


def attempts_of(refusals: Refusals, name: str) -> list[float]:
    with refusals.lock:
        return [t for t, n in refusals.attempts if n == name]


def test_a_model_queued_behind_refused_ones_is_written_before_any_is_retried(
    worker: tuple[Observer, Refusals],
) -> None:
    observer, refusals = worker
    for name in REFUSED:
        observer.queue.add(("ns", name))
    wait_until(lambda: attempts_of(refusals, "bad0"), timeout=10, what="the first refusal")
    observer.queue.add(("ns", "good"))
    wait_until(lambda: "good" in refusals.written, timeout=10, what="the good model written")
    written_at = attempts_of(refusals, "good")[0]

    # Every refused model was tried once before, and none a second time.
    assert {n: len([t for t in attempts_of(refusals, n) if t < written_at]) for n in REFUSED} == {
        n: 1 for n in REFUSED
    }


def test_a_refused_model_is_retried_later_and_later(worker: tuple[Observer, Refusals]) -> None:
    observer, refusals = worker
    observer.queue.add(("ns", "bad0"))
    wait_until(lambda: len(attempts_of(refusals, "bad0")) >= 4, timeout=20, what="4 attempts")
    observer.queue.add(("ns", "late"))
    wait_until(lambda: "late" in refusals.written, timeout=10, what="the late model written")

    times = attempts_of(refusals, "bad0")[:4]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # at least the backoff: 0.5, 1, 2 s (the queue never hands a key out before it is due)
    assert [gap >= FIRST * 2**i for i, gap in enumerate(gaps)] == [True, True, True]
