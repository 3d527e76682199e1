"""The webhook's Prometheus metrics, one set per server: gunicorn's workers add up.

Under `runway serve` (or gunicorn with webhook/gunicorn_options.py) every worker writes its
values to files in the server's private PROMETHEUS_MULTIPROC_DIR (webhook/multiprocess.py), and
a scrape of any worker reads all of them: counters are the server's totals and never go back
when a worker restarts. Without that directory (the app in a test, in process) the values stay
in the process.

Label values come from fixed sets, never from the request as sent: `kind` is one of the kinds
the webhook admits or "other" (a request's kind is whatever its sender wrote: written as a
label, a quote and a newline in it forged samples, and 300 reviews with 3 MiB kinds grew a
worker by 900 MiB), `operation` one of the four the decoder accepts, `code` one of ERROR_CODES,
`provider` a name from the loaded registry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from cryptography import x509
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
)

log = logging.getLogger(__name__)
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
# 400: the request could not be decoded; 500: the handler failed (internal error); 503: the
# provider configurations are not loaded yet.
ERROR_CODES = frozenset({400, 500, 503})
OUTCOMES = frozenset({"ended", "failed"})
CERTIFICATE_EXPIRY = "runway_serving_certificate_expiry_timestamp_seconds"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def kind_label(group: object, kind: object) -> str:
    """The `kind` label: an admitted kind (in its own group), else "other"."""
    return kind if isinstance(kind, str) and (group, kind) in KINDS else OTHER


def operation_label(operation: object) -> str:
    return operation if isinstance(operation, str) and operation in OPERATIONS else OTHER


class Metrics:
    """Admissions by kind/operation/allowed, their latency and errors, selections by provider,
    readiness, provider-config watch restarts and the serving certificate's expiry."""

    def __init__(self, *, multiprocess_dir: str = "", certificate: str = "") -> None:
        self._dir = multiprocess_dir
        self.registry = CollectorRegistry()
        # With a directory the values live in its files, which every scrape collects; the
        # metric objects then belong to no registry.
        own = None if multiprocess_dir else self.registry
        self._requests = Counter(
            "runway_admission_requests",
            "Admission requests answered.",
            ("kind", "operation", "allowed"),
            registry=own,
        )
        self._duration = Histogram(
            "runway_admission_duration_seconds",
            "Time to answer an admission request.",
            buckets=BUCKETS,
            registry=own,
        )
        self._errors = Counter(
            "runway_admission_errors",
            "Admission requests the webhook could not judge, by the code it answered.",
            ("code",),
            registry=own,
        )
        self._selections = Counter(
            "runway_provider_selection",
            "Providers stamped by the mutating webhook.",
            ("provider", "selection"),
            registry=own,
        )
        self._ready = Gauge(
            "runway_webhook_ready",
            "1 while the worker is ready (provider configurations loaded and not stale); "
            "across a server's workers, the lowest.",
            multiprocess_mode="livemin",
            registry=own,
        )
        self._restarts = Counter(
            "runway_provider_config_watch_restarts",
            "Provider-config watches that ended (normally) or failed, after which the source lists again.",
            ("outcome",),
            registry=own,
        )
        # The labelled children per label values (from the fixed sets, so a handful): labels()
        # takes a lock and builds its key on every call, a third of an admission's accounting.
        self._children: dict[tuple[object, ...], Counter] = {}
        self._certificate = ServingCertificate(certificate) if certificate else None
        if self._certificate is not None and own is not None:
            own.register(self._certificate)

    def observe(
        self, *, group: object, kind: object, operation: object, allowed: bool, seconds: float
    ) -> None:
        """Count one answer, under labels from the fixed sets (see kind_label)."""
        labels = (
            kind_label(group, kind),
            operation_label(operation),
            "true" if allowed else "false",
        )
        self._child(self._requests, labels).inc()
        self._duration.observe(seconds)

    def failed(self, code: int) -> None:
        """An admission answered with one of ERROR_CODES (any other code counts as "other")."""
        self._errors.labels(str(code) if code in ERROR_CODES else OTHER).inc()

    def selected(self, *, provider: str, how: str) -> None:
        self._child(self._selections, (provider, how)).inc()

    def _child(self, metric: Counter, labels: tuple[str, ...]) -> Counter:
        key = (metric, *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def source_ready(self, ready: bool) -> None:
        self._ready.set(1 if ready else 0)

    def every_worker_ready(self) -> bool:
        """Whether every live worker of the server last reported itself ready (the lowest of
        their runway_webhook_ready); in process, there is no other worker to ask. A pod whose
        /readyz one worker answers must not be ready while another cannot answer admissions yet:
        the API server's next request may reach that one."""
        if not self._dir:
            return True
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self._dir)
        values = [
            sample.value
            for family in registry.collect()
            if family.name == "runway_webhook_ready"
            for sample in family.samples
        ]
        return bool(values) and min(values) >= 1

    def watch_restarted(self, outcome: str) -> None:
        self._restarts.labels(outcome if outcome in OUTCOMES else OTHER).inc()

    def render(self) -> str:
        """The text format: this process's values, or every worker's from the directory."""
        if self._dir:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=self._dir)
            if self._certificate is not None:
                registry.register(self._certificate)
        else:
            registry = self.registry
        return generate_latest(_Exposed(registry)).decode()


class ServingCertificate(Collector):
    """The notAfter of the certificate the server presents, read from its file at each scrape
    (rotation replaces the file without a restart)."""

    def __init__(self, path: str) -> None:
        self._path = path

    def collect(self) -> Iterator[Metric]:
        try:
            with open(os.path.realpath(self._path), "rb") as handle:
                cert = x509.load_pem_x509_certificate(handle.read())
        except (OSError, ValueError) as err:
            log.warning(
                "serving certificate unreadable path=%s: %s", self._path, type(err).__name__
            )
            return
        family = GaugeMetricFamily(
            CERTIFICATE_EXPIRY, "When the serving certificate expires (notAfter, Unix seconds)."
        )
        family.add_metric([], cert.not_valid_after_utc.timestamp())
        yield family


class _Exposed(Collector):
    """A registry's families as /metrics shows them: sorted by name, samples by labels (buckets
    by bound), whatever order the workers' files were read in; without the `_created` samples
    prometheus_client adds in process (the multiprocess collector has none), so both modes
    answer the same series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in sorted(self._registry.collect(), key=lambda f: f.name):
            samples = [s for s in family.samples if not s.name.endswith("_created")]
            family.samples = sorted(samples, key=_sample_order)
            yield family


def _sample_order(sample: Sample) -> tuple[str, tuple[tuple[str, str], ...], float]:
    labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
    return sample.name, labels, float(sample.labels.get("le", "0"))
