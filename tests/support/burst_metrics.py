"""What the burst bench reads from kube-apiserver's `/metrics` between two scrapes around a
round: the admission webhooks' latency (per webhook name and type), their rejections and
answers by code, API Priority and Fairness rejections, 429s, and the server-side duration of the
creates themselves."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tests.support.promtext import Histogram, Labels, Scrape, counter_deltas, histogram_deltas

ADMISSION = "apiserver_admission_webhook_admission_duration_seconds"
REJECTIONS = "apiserver_admission_webhook_rejection_count"
WEBHOOK_REQUESTS = "apiserver_admission_webhook_request_total"
FLOW_REJECTED = "apiserver_flowcontrol_rejected_requests_total"
REQUESTS = "apiserver_request_total"
DURATION = "apiserver_request_duration_seconds"


@dataclass(frozen=True, slots=True)
class Latency:
    """One histogram series over a round: what it is, how many, mean, p50 and p99 (seconds)."""

    what: str
    count: int
    mean: float
    p50: float
    p99: float
    top: str = ""  # the highest bucket holding observations, and how many it holds


@dataclass(frozen=True, slots=True)
class RoundMetrics:
    webhooks: tuple[Latency, ...]  # per webhook name, type and whether it rejected
    creates: Latency | None  # the API server's own duration of the POSTs of ModelDeployments
    rejections: dict[Labels, float]  # by name, error_type, rejection_code
    webhook_codes: dict[Labels, float]  # by name, code
    flow_rejected: dict[Labels, float]  # by priority_level, reason
    throttled: float  # apiserver_request_total with code 429, any verb

    def lines(self) -> list[str]:
        out = [latency_line(x) for x in self.webhooks]
        if self.creates is not None:
            out.append(latency_line(self.creates))
        out += [
            f"webhook answers by code: {_pairs(self.webhook_codes)}",
            f"webhook rejections: {_pairs(self.rejections)}",
            f"flow-control rejections: {_pairs(self.flow_rejected)}; 429s: {self.throttled:.0f}",
        ]
        return out


def round_metrics(before: Scrape, after: Scrape, *, resource: str) -> RoundMetrics:
    """The deltas of one round; `resource` is the plural whose creates are timed."""
    webhooks = tuple(
        _latency(f"{d['name']} {d['type']} rejected={d.get('rejected', '?')}", h)
        for labels, h in histogram_deltas(before, after, ADMISSION).items()
        for d in (dict(labels),)
    )
    creates = [
        h
        for labels, h in histogram_deltas(before, after, DURATION).items()
        if _is_create(dict(labels), resource)
    ]
    requests = counter_deltas(before, after, REQUESTS, keep=("code",))
    return RoundMetrics(
        webhooks=webhooks,
        creates=_latency(f"API server POST {resource}", creates[0]) if creates else None,
        rejections=counter_deltas(
            before, after, REJECTIONS, keep=("name", "error_type", "rejection_code")
        ),
        webhook_codes=counter_deltas(before, after, WEBHOOK_REQUESTS, keep=("name", "code")),
        flow_rejected=counter_deltas(
            before, after, FLOW_REJECTED, keep=("priority_level", "reason")
        ),
        throttled=requests.get((("code", "429"),), 0.0),
    )


def _is_create(labels: Mapping[str, str], resource: str) -> bool:
    return (
        labels.get("verb") == "POST"
        and labels.get("resource") == resource
        and labels.get("dry_run", "") == ""
        and labels.get("subresource", "") == ""
    )


def webhook_latency(before: Scrape, after: Scrape) -> Latency | None:
    """The webhook's own time to answer (its runway_admission_duration_seconds, every worker),
    from the request read to the answer written: the part of the API server's call spent in
    Runway's code rather than in connecting, TLS and queueing for a thread."""
    found = histogram_deltas(before, after, "runway_admission_duration_seconds")
    return _latency("webhook's own answer time", found[()]) if () in found else None


def _latency(what: str, histogram: Histogram) -> Latency:
    count = int(histogram.count)
    mean = histogram.total / histogram.count if histogram.count else math.nan
    low, below, top = 0.0, 0.0, ""
    for le, cumulative in histogram.buckets:
        if cumulative > below:
            top = f"{cumulative - below:.0f} in ({low:g}, {le:g}] s"
        low, below = le, cumulative
    return Latency(what, count, mean, histogram.quantile(0.5), histogram.quantile(0.99), top)


def latency_line(x: Latency) -> str:
    return (
        f"{x.what}: {x.count} observed, mean {x.mean * 1e3:.1f} ms, "
        f"p50 ≈ {x.p50 * 1e3:.1f} ms, p99 ≈ {x.p99 * 1e3:.1f} ms (from buckets; {x.top})"
    )


def _pairs(counts: Mapping[Labels, float]) -> str:
    if not counts:
        return "none"
    return ", ".join(
        f"{' '.join(f'{k}={v}' for k, v in labels)}: {value:.0f}"
        for labels, value in counts.items()
    )
