"""The status controller's one write: a worker takes each queued ModelDeployment once, builds its
status with the core from the cache alone (its provider's status mapping, core/status) and writes
it through the status subresource when it differs. A key whose reconcile fails is queued again
after its own backoff; the worker goes on with the next key at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from controller.cache import Cache, ConfigMarks
from controller.classify import Prober
from controller.kinds import MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, is_watched
from controller.metrics import Metrics
from controller.queue import Queue
from controller.watching import WATCH_FAILURES
from core.model.kinds import GROUP, MODEL_DEPLOYMENT_PLURAL, VERSION, ModelDeployment
from core.model.servednames import served_name
from core.rendering.inferencegateway import capabilities_of, renders_pool
from core.selection.configs import ProviderRegistry
from core.status.modeldeployment import gateway_state, model_deployment_status
from kubeio.backoff import Backoff
from kubeio.client import failure
from kubeio.registry import build_registry
from kubeio.repeats import Repeats

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReconcileParts:
    """What the worker reads, writes and reports to."""

    objects: kubernetes.client.CustomObjectsApi
    cache: Cache
    queue: Queue
    marks: ConfigMarks
    metrics: Metrics
    throttle: Repeats
    backoff: Backoff
    leading: Callable[[], bool]  # whether writes are allowed (this replica holds the Lease)
    clock: Callable[[], dt.datetime]
    prober: Prober | None = None
    gateway_url: str = ""  # what status.gateway.endpoint says


class Reconciler:
    """The workers (several threads may run `work`: the queue gives a key to one at a time); the
    provider registry is rebuilt from the cached configs when one of them changed what selection
    reads (ConfigMarks)."""

    def __init__(self, parts: ReconcileParts) -> None:
        self._parts = parts
        self._lock = threading.Lock()
        self._registry: ProviderRegistry | None = None
        self._built_at = -1  # the ConfigMarks change count the registry was built at

    def registry(self) -> ProviderRegistry:
        with self._lock:
            changes = self._parts.marks.changes
            if self._registry is None or self._built_at != changes:
                configs = self._parts.cache.of_kind(PROVIDER_CONFIGS.kind)
                self._registry = build_registry(configs or None)
                self._built_at = changes
            return self._registry

    def status_of(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status `obj` (a stored ModelDeployment) should have now; None when its provider
        is one Runway has no plug-in for."""
        md = ModelDeployment(obj)
        registry = self.registry()
        plugin = registry.plugin(md.provider_name)
        if plugin is None:
            return None
        observed = self._parts.cache.owned_by(md.namespace, md.name)
        workload = plugin.watched.workload_status(md, observed)
        prober = self._parts.prober
        if prober is not None:
            key = (md.namespace, md.name)
            if workload.created:
                prober.forget(key)
            else:  # missing: refused by an older upstream schema? (controller/classify.py)
                refused, again = prober.check(md, registry, observed, is_watched)
                workload = refused or workload
                if again is not None:
                    self._parts.queue.later(key, again)
        gateway = None
        if (md.spec.get("gateway") or {}).get("enabled") is True and not registry.runs_test_backend(
            md
        ):
            capabilities = capabilities_of(md, registry)
            gateway = gateway_state(
                md,
                observed,
                pool_is_runways=renders_pool(md, capabilities),
                endpoint=self._parts.gateway_url,
                model_name=served_name(md, capabilities, registry.served_as(md)),
            )
        now = self._parts.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        return model_deployment_status(md, workload, gateway=gateway, now=now)

    def reconcile(self, key: tuple[str, str]) -> str:
        """Write the status of ModelDeployment `key` if it changed; the outcome's name."""
        namespace, name = key
        obj = self._parts.cache.get(MODEL_DEPLOYMENTS.kind, namespace, name)
        if obj is None:
            if self._parts.prober is not None:
                self._parts.prober.forget(key)
            return "gone"
        status = self.status_of(obj)
        if status is None or status == obj.get("status"):
            return "unchanged"
        body = {**obj, "status": status}
        try:
            written = self._parts.objects.replace_namespaced_custom_object_status(
                GROUP, VERSION, namespace, MODEL_DEPLOYMENT_PLURAL, name, body
            )
        except kubernetes.client.ApiException as err:
            if err.status in (404, 409):  # deleted, or changed since read: the watch brings it
                return "conflict" if err.status == 409 else "gone"
            raise
        self._parts.cache.put(MODEL_DEPLOYMENTS.kind, written)  # type: ignore[arg-type]  # the decoded JSON
        return "written"

    def work(self, stop: threading.Event) -> None:
        """Take queued keys and reconcile them while this replica leads. A key whose reconcile
        fails is queued again after its own backoff; the worker goes on with the next key at
        once."""
        while not stop.is_set():
            key = self._parts.queue.take(timeout=0.5)
            if key is None:
                continue
            try:
                if not self._parts.leading():
                    continue  # the leader writes; a follower keeps its cache warm
                started = time.perf_counter()
                result = self._reconcile_once(key)
                self._parts.metrics.reconciled(result, time.perf_counter() - started)
            finally:
                self._parts.queue.done(key)

    def _reconcile_once(self, key: tuple[str, str]) -> str:
        subject = f"{key[0]}/{key[1]}"
        throttle = self._parts.throttle
        try:
            result = self.reconcile(key)
        except WATCH_FAILURES as err:
            throttle.warning(subject, failure(err))
        except Exception as err:  # one object must not stop the worker for every other one
            if throttle.warning(subject, f"could not be reconciled: {failure(err)}"):
                log.debug("status-controller: %s", subject, exc_info=True)
        else:
            self._parts.backoff.succeed(key)
            throttle.clear(subject)
            return result
        self._parts.queue.later(key, self._parts.backoff.fail(key)[1])
        return "error"
