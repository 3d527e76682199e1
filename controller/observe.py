"""The controller's view of the cluster and its one write.

A watcher per kind (list, then watch from the list's resourceVersion; list again after an
error or an expired watch) keeps a cache of ModelDeployments, InferenceProviderConfigs and the
upstream objects Runway renders (selected by Runway's managed-by label, so nothing else is held
in memory). Every change queues the ModelDeployment it belongs to (the
airunway.ai/model-deployment label); a worker takes each queued name once, builds its status
with the core (its provider's status mapping, core/status) and writes it through the status
subresource when it differs. A kind whose CRD is not installed is watched again later.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import kubernetes
import urllib3

from controller.classify import Prober
from controller.health import HealthParts, check_providers
from controller.logs import Throttle
from controller.queue import Backoff, Queue
from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER_PLURAL,
    GROUP,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    MODEL_DEPLOYMENT_PLURAL,
    VERSION,
    ModelDeployment,
)
from core.model.servednames import served_name
from core.rendering.common import LABEL_MANAGED_BY, LABEL_MODEL_DEPLOYMENT, MANAGED_BY
from core.rendering.inferencegateway import capabilities_of
from core.selection.configs import ProviderRegistry
from core.status.modeldeployment import gateway_state, model_deployment_status
from kubeio.client import failure
from kubeio.objects import upstream_kinds
from kubeio.registry import build_registry

__all__ = [  # Queue moved to controller/queue.py; tests and bench/ still import it from here
    "KINDS",
    "MODEL_DEPLOYMENTS",
    "PROVIDER_CONFIGS",
    "WATCH_FAILURES",
    "Cache",
    "Kind",
    "Metrics",
    "ObserveSettings",
    "Observer",
    "Queue",
]
log = logging.getLogger(__name__)

CONNECT_SECONDS = 10.0
GRACE_SECONDS = 30.0
LIST_SECONDS = 60.0  # a list not answered by then failed (the kind lists again)
WATCH_FAILURES = (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError)


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    managed_only: bool = True  # only objects with Runway's managed-by label


MODEL_DEPLOYMENTS = Kind(
    GROUP, VERSION, MODEL_DEPLOYMENT_PLURAL, "ModelDeployment", managed_only=False
)
PROVIDER_CONFIGS = Kind(
    GROUP,
    VERSION,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    "InferenceProviderConfig",
    namespaced=False,
    managed_only=False,
)
UPSTREAM = tuple(Kind(*kind) for kind in upstream_kinds())
# What gateway-sync reads besides ModelDeployments and provider configs; watched so that a
# change wakes a gateway sync running in this process (--litellm-url).
EXTERNAL_MODEL_PROVIDERS = Kind(
    EMP_GROUP, VERSION, EXTERNAL_MODEL_PROVIDER_PLURAL, "ExternalModelProvider", managed_only=False
)
KINDS = (MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, EXTERNAL_MODEL_PROVIDERS, *UPSTREAM)
# A change of these kinds' spec (a new generation), or one created or deleted, changes what the
# gateway registers; a status write does not.
GATEWAY_INPUTS = (MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, EXTERNAL_MODEL_PROVIDERS)


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

    def render(self) -> str:
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
                "# TYPE runway_status_dry_runs_total counter",
                *(
                    f'runway_status_dry_runs_total{{result="{k}"}} {v}'
                    for k, v in sorted(self.dry_runs.items())
                ),
                "# TYPE runway_status_leader gauge",
                f"runway_status_leader {1 if self.leader else 0}",
            ]
        return "\n".join(lines) + "\n"


class Cache:
    """The watched objects by (kind, namespace, name), indexed by the ModelDeployment each
    belongs to (its airunway.ai/model-deployment label), and which kinds have listed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._owners: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
        self._synced: set[str] = set()

    @staticmethod
    def _key(kind: str, obj: Mapping[str, Any]) -> tuple[str, str, str]:
        meta = obj.get("metadata") or {}
        return (kind, str(meta.get("namespace") or ""), str(meta.get("name")))

    @staticmethod
    def _owner(key: tuple[str, str, str], obj: Mapping[str, Any]) -> tuple[str, str] | None:
        if key[0] in (MODEL_DEPLOYMENTS.kind, PROVIDER_CONFIGS.kind):
            return None
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_MODEL_DEPLOYMENT)
        return (key[1], str(label)) if label else None

    def _unset(self, key: tuple[str, str, str]) -> None:  # the lock is held
        old = self._objects.pop(key, None)
        owner = self._owner(key, old) if old is not None else None
        if owner is not None:
            keys = self._owners.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._owners[owner]

    def _set(self, key: tuple[str, str, str], obj: dict[str, Any]) -> None:  # the lock is held
        self._unset(key)
        self._objects[key] = obj
        owner = self._owner(key, obj)
        if owner is not None:
            self._owners.setdefault(owner, set()).add(key)

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._set(self._key(kind, obj), obj)

    def drop(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._unset((kind, namespace, name))

    def replace(self, kind: str, objects: list[dict[str, Any]]) -> None:
        with self._lock:
            for key in [k for k in self._objects if k[0] == kind]:
                self._unset(key)
            for obj in objects:
                self._set(self._key(kind, obj), obj)
            self._synced.add(kind)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get((kind, namespace, name))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [o for (k, _, _), o in self._objects.items() if k == kind]

    def owned_by(self, namespace: str, md: str) -> dict[str, dict[str, Any]]:
        """`Kind/name` -> object for the upstream objects of ModelDeployment `namespace/md`."""
        with self._lock:
            keys = sorted(self._owners.get((namespace, md), ()))
            return {f"{k}/{n}": self._objects[(k, ns, n)] for k, ns, n in keys}

    def synced(self, kinds: tuple[Kind, ...]) -> bool:
        with self._lock:
            return all(k.kind in self._synced for k in kinds)


@dataclass(frozen=True, slots=True)
class ObserveSettings:
    namespace: str | None = None  # None: every namespace
    gateway_url: str = ""  # what status.gateway.endpoint says (the Gateway's URL)
    watch_seconds: int = 300
    retry_seconds: float = 2.0  # before a failed watch lists again
    backoff_seconds: float = 0.5  # a failed reconcile's first delay, doubled per failure ...
    backoff_most: float = 300.0  # ... up to this (per object: others go on at once)
    log_every: float = 60.0  # the same warning about the same object at most this often


class Observer:
    """The watches, the queue and the worker; `leading()` says whether writes are allowed."""

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        settings: ObserveSettings,
        metrics: Metrics,
        leading: Callable[[], bool],
        *,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        on_gateway_change: Callable[[], None] | None = None,
        prober: Prober | None = None,
        queue: Queue | None = None,
    ) -> None:
        self._objects = kubernetes.client.CustomObjectsApi(api)
        self._prober = prober
        self._settings = settings
        self._metrics = metrics
        self._leading = leading
        self._clock = clock
        self.cache = Cache()
        self.queue = queue or Queue()
        self._registry: ProviderRegistry | None = None
        self._config_marks: dict[str, tuple[Any, str]] = {}
        self._on_gateway_change = on_gateway_change
        self._generations: dict[tuple[str, str, str], Any] = {}
        self.backoff = Backoff(settings.backoff_seconds, settings.backoff_most)
        self.throttle = Throttle(log, settings.log_every)

    # --- watching ---------------------------------------------------------------------------

    def _list(self, kind: Kind, **kwargs: Any) -> Any:
        """The list (or, with watch=True from the Watch, the stream) of `kind`; upstream kinds
        by Runway's managed-by label only."""
        if kind.managed_only:
            kwargs["label_selector"] = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
        if kind.namespaced and self._settings.namespace:
            return self._objects.list_namespaced_custom_object(
                kind.group, kind.version, self._settings.namespace, kind.plural, **kwargs
            )
        return self._objects.list_cluster_custom_object(
            kind.group, kind.version, kind.plural, **kwargs
        )

    def watch(self, kind: Kind, stop: threading.Event) -> None:
        """List and watch `kind` until `stop`; every change queues its ModelDeployment."""
        while not stop.is_set():
            try:
                listed = self._list(kind, _request_timeout=(CONNECT_SECONDS, LIST_SECONDS))
                items = [dict(i) for i in listed.get("items") or ()]
                self.cache.replace(kind.kind, items)
                for obj in items:
                    self._changed(kind, obj)
                    self._gateway_input(kind, obj, "ADDED")
                version = (listed.get("metadata") or {}).get("resourceVersion")
                for event in self._events(kind, version, stop):
                    obj = dict(event.get("object") or {})
                    if event.get("type") == "ERROR":
                        break  # e.g. 410 Gone: the resourceVersion expired; list again
                    meta = obj.get("metadata") or {}
                    if event.get("type") == "DELETED":
                        self.cache.drop(
                            kind.kind, str(meta.get("namespace") or ""), str(meta.get("name"))
                        )
                    else:
                        self.cache.put(kind.kind, obj)
                    self._changed(kind, obj)
                    self._gateway_input(kind, obj, str(event.get("type")))
            except WATCH_FAILURES as err:
                status = getattr(err, "status", None)
                if status == 404:  # the CRD is not installed: nothing of this kind exists
                    self.cache.replace(kind.kind, [])
                else:
                    self.throttle.warning(f"watching {kind.kind}", failure(err))
                self._metrics.restarted(kind.kind)
                stop.wait(self._settings.retry_seconds if status != 404 else 30.0)
            except Exception:  # an undecodable event, say: the watch restarts, it never dies
                log.exception("status-controller: watching %s", kind.kind)
                self._metrics.restarted(kind.kind)
                stop.wait(self._settings.retry_seconds)

    def _events(
        self, kind: Kind, version: str | None, stop: threading.Event
    ) -> Iterator[dict[str, Any]]:
        watcher = kubernetes.watch.Watch()
        try:
            for event in watcher.stream(
                self._list,
                kind,
                resource_version=version,
                timeout_seconds=self._settings.watch_seconds,
                # a watch silent this long past its server-side timeout is dead (a frozen API
                # server keeps the connection open): it fails, and the kind lists again
                _request_timeout=(CONNECT_SECONDS, self._settings.watch_seconds + GRACE_SECONDS),
            ):
                if stop.is_set():
                    return
                yield event
        finally:
            watcher.stop()

    def _changed(self, kind: Kind, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if kind is PROVIDER_CONFIGS:
            # Only a change of what selection and rendering read (spec, annotations) bears on
            # ModelDeployment status; a status write (the health pass's heartbeat) does not.
            mark = (
                meta.get("generation"),
                json.dumps(meta.get("annotations") or {}, sort_keys=True),
            )
            name = str(meta.get("name"))
            if self._config_marks.get(name) == mark:
                return
            self._config_marks[name] = mark
            self._registry = None  # rebuilt on the next reconcile
            self.resync()
            return
        namespace = str(meta.get("namespace") or "")
        if kind is MODEL_DEPLOYMENTS:
            self.queue.add((namespace, str(meta.get("name"))))
            return
        owner = (meta.get("labels") or {}).get(LABEL_MODEL_DEPLOYMENT)
        if owner:
            self.queue.add((namespace, str(owner)))

    def _gateway_input(self, kind: Kind, obj: Mapping[str, Any], event: str) -> None:
        """Wake the gateway sync when what it registers may have changed."""
        if self._on_gateway_change is None or kind not in GATEWAY_INPUTS:
            return
        meta = obj.get("metadata") or {}
        key = (kind.kind, str(meta.get("namespace") or ""), str(meta.get("name")))
        generation = meta.get("generation")
        if event == "DELETED":
            self._generations.pop(key, None)
        elif self._generations.get(key, object()) == generation:
            return  # a status write: the same generation
        else:
            self._generations[key] = generation
        self._on_gateway_change()

    def resync(self) -> None:
        """Queue every ModelDeployment (the periodic level-triggered pass)."""
        for md in self.cache.of_kind(MODEL_DEPLOYMENTS.kind):
            m = md.get("metadata") or {}
            self.queue.add((str(m.get("namespace") or ""), str(m.get("name"))))

    # --- reconciling ------------------------------------------------------------------------

    def registry(self) -> ProviderRegistry:
        if self._registry is None:
            configs = self.cache.of_kind(PROVIDER_CONFIGS.kind)
            self._registry = build_registry(configs or None)
        return self._registry

    def status_of(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status `obj` (a stored ModelDeployment) should have now; None when its provider
        is one Runway has no plug-in for."""
        md = ModelDeployment(obj)
        registry = self.registry()
        plugin = registry.plugin(md.provider_name)
        if plugin is None:
            return None
        observed = self.cache.owned_by(md.namespace, md.name)
        workload = plugin.workload_status(md, observed)
        if self._prober is not None:
            key = (md.namespace, md.name)
            if workload.created:
                self._prober.forget(key)
            else:  # missing: refused by an older upstream schema? (controller/classify.py)
                refused, again = self._prober.check(md, registry, observed, _watched)
                workload = refused or workload
                if again is not None:
                    self.queue.later(key, again)
        gateway = None
        if (md.spec.get("gateway") or {}).get("enabled") is True and not registry.runs_test_backend(
            md
        ):
            capabilities = capabilities_of(md, registry)
            gateway = gateway_state(
                md,
                observed,
                pool_is_runways=not capabilities.get("managesInferencePool"),
                endpoint=self._settings.gateway_url,
                model_name=served_name(md, capabilities, registry.served_as(md)),
            )
        now = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        return model_deployment_status(md, workload, gateway=gateway, now=now)

    def reconcile(self, key: tuple[str, str]) -> str:
        """Write the status of ModelDeployment `key` if it changed; the outcome's name."""
        namespace, name = key
        obj = self.cache.get(MODEL_DEPLOYMENTS.kind, namespace, name)
        if obj is None:
            if self._prober is not None:
                self._prober.forget(key)
            return "gone"
        status = self.status_of(obj)
        if status is None or status == obj.get("status"):
            return "unchanged"
        body = {**obj, "status": status}
        try:
            written = self._objects.replace_namespaced_custom_object_status(
                GROUP, VERSION, namespace, MODEL_DEPLOYMENT_PLURAL, name, body
            )
        except kubernetes.client.ApiException as err:
            if err.status in (404, 409):  # deleted, or changed since read: the watch brings it
                return "conflict" if err.status == 409 else "gone"
            raise
        self.cache.put(MODEL_DEPLOYMENTS.kind, written)  # type: ignore[arg-type]  # the decoded JSON
        return "written"

    def work(self, stop: threading.Event) -> None:
        """Take queued keys and reconcile them while this replica leads. A key whose reconcile
        fails is queued again after its own backoff; the worker goes on with the next key at
        once."""
        while not stop.is_set():
            key = self.queue.take(timeout=0.5)
            if key is None:
                continue
            if not self._leading():
                continue  # the leader writes; a follower keeps its cache warm
            started = time.perf_counter()
            result = self._reconcile_once(key)
            self._metrics.reconciled(result, time.perf_counter() - started)

    def _reconcile_once(self, key: tuple[str, str]) -> str:
        subject = f"{key[0]}/{key[1]}"
        try:
            result = self.reconcile(key)
        except WATCH_FAILURES as err:
            self.throttle.warning(subject, failure(err))
        except Exception as err:  # one object must not stop the worker for every other one
            if self.throttle.warning(subject, f"could not be reconciled: {failure(err)}"):
                log.debug("status-controller: %s", subject, exc_info=True)
        else:
            self.backoff.succeeded(key)
            self.throttle.clear(subject)
            return result
        self.queue.later(key, self.backoff.failed(key))
        return "error"

    # --- provider health --------------------------------------------------------------------

    def check_providers(
        self, api: kubernetes.client.ApiClient, *, version: str, heartbeat: float
    ) -> int:
        """Write each InferenceProviderConfig's status when it changed or its heartbeat is
        older than `heartbeat` seconds (controller/health.py); how many were written."""
        return check_providers(
            HealthParts(api, self._objects, self.throttle),
            self.cache.of_kind(PROVIDER_CONFIGS.kind),
            self._clock(),
            version=version,
            heartbeat=heartbeat,
        )


_WATCHED = {(f"{k.group}/{k.version}", k.kind) for k in UPSTREAM}


def _watched(api_version: str, kind: str) -> bool:
    """Whether the controller watches objects of this kind (sees them missing)."""
    return (api_version, kind) in _WATCHED
