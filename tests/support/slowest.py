"""The slowest answers of a fuzz run, per class: kept with their input, printed, saved, replayed.

An answer is timed three ways, so a slow one can be told apart: wall time (what the API server
waits), CPU time of the answering thread (the work; scheduling on a loaded machine is not in
it), and the part of that time the garbage collector ran (a collection of the whole heap lands in
whichever answer allocates at that moment, and the heap of a long fuzz run is mostly the
generator's own state, not the webhook's).
"""

from __future__ import annotations

import gc
import heapq
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEEP = 5  # answers kept per class, by wall time and by CPU time each
PREVIEW = 160  # characters of a review shown in the report
SAVED = 256 * 1024  # bytes: larger reviews are described in slowest.json, not saved


@dataclass(frozen=True, slots=True)
class Timed:
    """One answer's times, in seconds; cpu and gc are None when the answer was computed in
    another process (over TLS)."""

    wall: float
    cpu: float | None = None
    gc: float | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    kind: str  # the input class
    path: str  # the endpoint
    document: dict[str, Any]  # the review as sent
    timed: Timed

    def record(self) -> dict[str, Any]:
        """The JSON form saved for replay (a review over SAVED bytes is described, not saved:
        those are the cases at the input limits, which tests/support/limits.py rebuilds)."""
        t = self.timed
        size = len(json.dumps(self.document))
        return {
            "class": self.kind,
            "path": self.path,
            "wall_ms": round(t.wall * 1000, 3),
            "cpu_ms": None if t.cpu is None else round(t.cpu * 1000, 3),
            "gc_ms": None if t.gc is None else round(t.gc * 1000, 3),
            "shape": describe(self.document),
            "review": self.document if size <= SAVED else None,
        }


@dataclass
class GcClock:
    """Seconds the garbage collector has run in this process since `start()` (gc.callbacks)."""

    total: float = 0.0
    _began: float = 0.0
    collections: list[int] = field(default_factory=lambda: [0, 0, 0])

    def start(self) -> None:
        gc.callbacks.append(self._callback)

    def stop(self) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._began
            self.collections[info["generation"]] += 1


@contextmanager
def timing(clock: GcClock) -> Iterator[list[Timed]]:
    """Times the block: wall, the thread's CPU and the collector's share; the result is appended
    to the yielded list when the block ends."""
    out: list[Timed] = []
    gc0, cpu0, wall0 = clock.total, time.thread_time(), time.perf_counter()
    yield out
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    out.append(Timed(wall, cpu, clock.total - gc0))


class Slowest:
    """The KEEP slowest answers per class, by wall time and by CPU time."""

    def __init__(self) -> None:
        self._wall: dict[str, list[tuple[float, int, Answer]]] = {}
        self._cpu: dict[str, list[tuple[float, int, Answer]]] = {}
        self._seen = 0  # tie-breaker: heap entries never compare the answers themselves

    def add(self, answer: Answer) -> None:
        self._seen += 1
        _push(self._wall.setdefault(answer.kind, []), answer.timed.wall, self._seen, answer)
        if answer.timed.cpu is not None:
            _push(self._cpu.setdefault(answer.kind, []), answer.timed.cpu, self._seen, answer)

    def by_wall(self, kind: str) -> list[Answer]:
        return [a for _, _, a in sorted(self._wall.get(kind, []), key=lambda e: -e[0])]

    def by_cpu(self, kind: str) -> list[Answer]:
        return [a for _, _, a in sorted(self._cpu.get(kind, []), key=lambda e: -e[0])]

    def slowest(self) -> float:
        return max((e[0] for heap in self._wall.values() for e in heap), default=0.0)

    def kinds(self) -> list[str]:
        return sorted(self._wall)

    def report(self, shown: int = 3) -> list[str]:
        """Lines: per class, the slowest answers by wall time, then by CPU time."""
        lines = []
        for kind in self.kinds():
            lines.append(f"  {kind}: slowest by wall time")
            lines += [f"    {_line(a)}" for a in self.by_wall(kind)[:shown]]
            if self._cpu.get(kind):
                lines.append(f"  {kind}: slowest by CPU time")
                lines += [f"    {_line(a)}" for a in self.by_cpu(kind)[:shown]]
        return lines

    def answers(self) -> list[Answer]:
        """Every kept answer once, slowest wall time first within a class."""
        kept: dict[int, Answer] = {}
        for kind in self.kinds():
            for answer in self.by_wall(kind) + self.by_cpu(kind):
                kept.setdefault(id(answer), answer)
        return list(kept.values())


def _push(heap: list[tuple[float, int, Answer]], key: float, seen: int, answer: Answer) -> None:
    if len(heap) < KEEP:
        heapq.heappush(heap, (key, seen, answer))
    elif key > heap[0][0]:
        heapq.heapreplace(heap, (key, seen, answer))


def _line(answer: Answer) -> str:
    t = answer.timed
    times = f"wall {t.wall * 1000:7.1f} ms"
    if t.cpu is not None and t.gc is not None:
        times += f", cpu {t.cpu * 1000:7.1f} ms, gc {t.gc * 1000:6.1f} ms"
    return f"{times}  {answer.path}  {describe(answer.document)}"


def describe(document: Any) -> str:
    """A compact description of a review: size, nesting depth, longest string, and the start of
    its request (enough to recognise the input; the saved file has all of it)."""
    text = json.dumps(document)
    request = document.get("request") if isinstance(document, dict) else None
    head = json.dumps(request)[:PREVIEW] if isinstance(request, dict) else text[:PREVIEW]
    return (
        f"[{len(text)} B, depth {_depth(document)}, longest string {_longest(document)}] "
        f"{head}{'...' if len(head) == PREVIEW else ''}"
    )


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _depth(value: Any) -> int:
    return max(depth for _, depth in _walk(value))


def _longest(value: Any) -> int:
    return max((len(node) for node, _ in _walk(value) if isinstance(node, str)), default=0)


def save(answers: list[dict[str, Any]], directory: Path) -> Path:
    """Write the answers' records to DIRECTORY/slowest.json (replaced each run); its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "slowest.json"
    path.write_text(json.dumps(answers, indent=1) + "\n")
    return path


def load(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(path.read_text())
    return records
