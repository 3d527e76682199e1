"""The work queue of the status controller: ModelDeployment keys to reconcile, each taken once
however often it is queued, some due later (a key whose reconcile failed comes back after its own
backoff, kubeio.backoff.Backoff, so one object whose write keeps failing is retried later and
later while every other object is reconciled at once; client-go's workqueue is the model).

Several workers take from one queue; a key is with one of them at a time: from `take` to `done`
it is in flight, and a key queued meanwhile waits until `done`, then goes to the back of the
queue (so two workers never write the same ModelDeployment at once)."""

from __future__ import annotations

import collections
import heapq
import threading
import time
from collections.abc import Callable


class Queue:
    """ModelDeployment keys (namespace, name) to reconcile; a key queued twice is taken once.
    `later` queues a key after a delay (a model waiting for its next dry run)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._cond = threading.Condition()
        self._order: collections.deque[tuple[str, str]] = collections.deque()
        self._queued: set[tuple[str, str]] = set()
        self._clock = clock
        self._later: list[tuple[float, tuple[str, str]]] = []  # a heap by due time
        self._due: dict[tuple[str, str], float] = {}
        self._flying: set[tuple[str, str]] = set()  # taken, not done
        self._again: set[tuple[str, str]] = set()  # queued while in flight

    def add(self, key: tuple[str, str]) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: tuple[str, str]) -> None:  # the lock is held
        if key in self._flying:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._order.append(key)
            self._cond.notify()

    def later(self, key: tuple[str, str], seconds: float) -> None:
        """Queue `key` in `seconds` (the earliest of several asks wins)."""
        with self._cond:
            due = self._clock() + max(seconds, 0.0)
            if self._due.get(key, float("inf")) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._later, (due, key))
            self._cond.notify()

    def _move_due(self) -> float | None:  # the lock is held; seconds to the next due key
        now = self._clock()
        while self._later:
            due, key = self._later[0]
            if self._due.get(key) != due:
                heapq.heappop(self._later)  # superseded by an earlier ask
                continue
            if due > now:
                return due - now
            heapq.heappop(self._later)
            del self._due[key]
            self._add(key)
        return None

    def take(self, timeout: float) -> tuple[str, str] | None:
        """The next key (in flight until `done`), or None after `timeout` seconds."""
        with self._cond:
            wait = self._move_due()
            if not self._order:
                self._cond.wait(timeout if wait is None else min(timeout, wait))
                self._move_due()
            if not self._order:
                return None
            key = self._order.popleft()
            self._queued.discard(key)
            self._flying.add(key)
            return key

    def done(self, key: tuple[str, str]) -> None:
        """The worker that took `key` is finished with it: queued meanwhile, it is queued now."""
        with self._cond:
            self._flying.discard(key)
            if key in self._again:
                self._again.discard(key)
                self._add(key)

    def __len__(self) -> int:
        with self._cond:
            return len(self._order)
