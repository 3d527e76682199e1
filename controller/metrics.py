"""The status controller's counters, from a fixed label set, as Prometheus text (/metrics): its
reconciles, watch events and restarts per kind, dry runs and leadership, and at render time the
queue's depth and how many objects of each kind the cache holds (what a crowded cluster's bench,
bench/crowded.py, samples)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.kinds import KINDS


@dataclass
class Metrics:
    """Counters and latency sums from a fixed label set (served at /metrics)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    reconciles: dict[str, int] = field(
        default_factory=lambda: {"written": 0, "unchanged": 0, "gone": 0, "conflict": 0, "error": 0}
    )
    seconds_sum: float = 0.0
    seconds_count: int = 0
    watch_restarts: dict[str, int] = field(default_factory=dict)
    watch_events: dict[str, int] = field(default_factory=dict)
    dry_runs: dict[str, int] = field(default_factory=lambda: {"refused": 0, "passed": 0})
    leader: bool = False

    def reconciled(self, result: str, seconds: float) -> None:
        with self.lock:
            self.reconciles[result] += 1
            self.seconds_sum += seconds
            self.seconds_count += 1

    def dry_run(self, refused: bool) -> None:
        with self.lock:
            self.dry_runs["refused" if refused else "passed"] += 1

    def restarted(self, kind: str) -> None:
        with self.lock:
            self.watch_restarts[kind] = self.watch_restarts.get(kind, 0) + 1

    def event(self, kind: str) -> None:
        """One watch event (or one listed object) of `kind` reached the cache."""
        with self.lock:
            self.watch_events[kind] = self.watch_events.get(kind, 0) + 1

    def render(self, *, queue_depth: int = 0, cached: Mapping[str, int] | None = None) -> str:
        held = cached or {}
        with self.lock:
            lines = [
                "# TYPE runway_status_reconciles_total counter",
                *(
                    f'runway_status_reconciles_total{{result="{k}"}} {v}'
                    for k, v in sorted(self.reconciles.items())
                ),
                "# TYPE runway_status_reconcile_seconds summary",
                f"runway_status_reconcile_seconds_sum {self.seconds_sum:.6f}",
                f"runway_status_reconcile_seconds_count {self.seconds_count}",
                "# TYPE runway_status_watch_restarts_total counter",
                *(
                    f'runway_status_watch_restarts_total{{kind="{k.kind}"}} '
                    f"{self.watch_restarts.get(k.kind, 0)}"
                    for k in KINDS
                ),
                "# TYPE runway_status_watch_events_total counter",
                *(
                    f'runway_status_watch_events_total{{kind="{k.kind}"}} '
                    f"{self.watch_events.get(k.kind, 0)}"
                    for k in KINDS
                ),
                "# TYPE runway_status_cached_objects gauge",
                *(
                    f'runway_status_cached_objects{{kind="{k.kind}"}} {held.get(k.kind, 0)}'
                    for k in KINDS
                ),
                "# TYPE runway_status_queue_depth gauge",
                f"runway_status_queue_depth {queue_depth}",
                "# TYPE runway_status_dry_runs_total counter",
                *(
                    f'runway_status_dry_runs_total{{result="{k}"}} {v}'
                    for k, v in sorted(self.dry_runs.items())
                ),
                "# TYPE runway_status_leader gauge",
                f"runway_status_leader {1 if self.leader else 0}",
            ]
        return "\n".join(lines) + "\n"
