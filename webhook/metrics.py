"""Prometheus text metrics for one worker process (each gunicorn worker keeps its own).

Label values come from fixed sets, never from the request as sent: `kind` is one of the kinds
the webhook admits or "other" (a request's kind is whatever its sender wrote: written as a
label, a quote and a newline in it forged samples, and 300 reviews with 3 MiB kinds grew a
worker by 900 MiB), `operation` one of the four the decoder accepts, `provider` a name from the
loaded registry. Values are escaped as the text format requires all the same.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
)

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
KINDS = frozenset(
    {
        (GROUP, MODEL_DEPLOYMENT),
        (GROUP, INFERENCE_PROVIDER_CONFIG),
        (EMP_GROUP, EXTERNAL_MODEL_PROVIDER),
    }
)
OTHER = "other"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


def kind_label(group: object, kind: object) -> str:
    """The `kind` label: an admitted kind (in its own group), else "other"."""
    return kind if isinstance(kind, str) and (group, kind) in KINDS else OTHER


def operation_label(operation: object) -> str:
    return operation if isinstance(operation, str) and operation in OPERATIONS else OTHER


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(pairs.items()))
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

    def observe(
        self, *, group: object, kind: object, operation: object, allowed: bool, seconds: float
    ) -> None:
        """Count one answer, under labels from the fixed sets (see kind_label)."""
        key = (kind_label(group, kind), operation_label(operation), "true" if allowed else "false")
        with self._lock:
            self._requests[key] += 1
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
