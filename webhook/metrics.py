"""Prometheus text metrics for one worker process (each gunicorn worker keeps its own)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _labels(pairs: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return f"{{{inner}}}" if inner else ""


class Metrics:
    """Admission requests by kind/operation/allowed, latency, selections by provider and how."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, str]] = Counter()
        self._selections: Counter[tuple[str, str]] = Counter()
        self._buckets = [0] * len(BUCKETS)
        self._count = 0
        self._sum = 0.0

    def observe(self, *, kind: str, operation: str, allowed: bool, seconds: float) -> None:
        with self._lock:
            self._requests[(kind, operation, "true" if allowed else "false")] += 1
            self._count += 1
            self._sum += seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1

    def selected(self, *, provider: str, how: str) -> None:
        with self._lock:
            self._selections[(provider, how)] += 1

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP runway_admission_requests_total Admission requests answered.",
                "# TYPE runway_admission_requests_total counter",
            ]
            for (kind, op, ok), n in sorted(self._requests.items()):
                lines.append(
                    f"runway_admission_requests_total{_labels({'kind': kind, 'operation': op, 'allowed': ok})} {n}"
                )
            lines += [
                "# HELP runway_admission_duration_seconds Time to answer an admission request.",
                "# TYPE runway_admission_duration_seconds histogram",
            ]
            for bound, n in zip(BUCKETS, self._buckets, strict=True):
                lines.append(f'runway_admission_duration_seconds_bucket{{le="{bound}"}} {n}')
            lines += [
                f'runway_admission_duration_seconds_bucket{{le="+Inf"}} {self._count}',
                f"runway_admission_duration_seconds_sum {self._sum:.6f}",
                f"runway_admission_duration_seconds_count {self._count}",
                "# HELP runway_provider_selection_total Providers stamped by the mutating webhook.",
                "# TYPE runway_provider_selection_total counter",
            ]
            for (provider, how), n in sorted(self._selections.items()):
                lines.append(
                    f"runway_provider_selection_total{_labels({'provider': provider, 'selection': how})} {n}"
                )
            return "\n".join(lines) + "\n"
