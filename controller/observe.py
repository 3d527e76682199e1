"""The status controller put together: its cache, queue, watches, worker and provider health
pass, over one API client, as one Observer that controller/run.py starts in threads.

A watcher per kind (controller/watching.py over kubeio.watch: list, then watch from the list's
resourceVersion; list again after an error or an expired watch) keeps a cache
(controller/cache.py) of ModelDeployments, InferenceProviderConfigs and the upstream objects
Runway renders (selected by Runway's managed-by label, so nothing else is held in memory). Every
change queues the ModelDeployment it belongs to; the worker (controller/reconcile.py) takes each
queued name once, builds its status with the core and writes it through the status subresource
when it differs. Provider health is controller/health.py's.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from controller.cache import Cache, ConfigMarks, held
from controller.classify import Prober
from controller.health import HealthParts, check_providers
from controller.kinds import PROVIDER_CONFIGS, Kind
from controller.metrics import Metrics
from controller.queue import Queue
from controller.reconcile import ReconcileParts, Reconciler
from controller.watching import KindWatch, WatchParts, resync
from core.selection.configs import ProviderRegistry
from kubeio.backoff import Backoff
from kubeio.repeats import Repeats
from kubeio.watch import PAGE, WatchTiming, watch

log = logging.getLogger(__name__)

PREFIX = "status-controller: "  # what every rate-limited warning starts with
LIST_SECONDS = 60.0  # a list not answered by then failed (the kind lists again)
ABSENT_SECONDS = 30.0  # before a kind whose CRD is not installed is listed again


@dataclass(frozen=True, slots=True)
class ObserveSettings:
    namespace: str | None = None  # None: every namespace
    gateway_url: str = ""  # what status.gateway.endpoint says (the Gateway's URL)
    watch_seconds: int = 300
    retry_seconds: float = 2.0  # before a failed watch lists again
    backoff_seconds: float = 0.5  # a failed reconcile's first delay, doubled per failure ...
    backoff_most: float = 300.0  # ... up to this (per object: others go on at once)
    log_every: float = 60.0  # the same warning about the same object at most this often
    list_page: int = PAGE  # objects per page of a list
    workers: int = 4  # threads writing statuses (one key is with one of them at a time)


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
        self._api = api
        self._objects = kubernetes.client.CustomObjectsApi(api)
        self._settings = settings
        self._clock = clock
        self.cache = Cache()
        self.queue = queue or Queue()
        self.backoff = Backoff(settings.backoff_seconds, settings.backoff_most)
        self.throttle = Repeats(log, every=settings.log_every, prefix=PREFIX)
        marks = ConfigMarks()
        self._watching = WatchParts(
            self.cache, self.queue, marks, metrics, self.throttle, on_gateway_change
        )
        self._timing = WatchTiming(
            watch_seconds=settings.watch_seconds,
            list_seconds=LIST_SECONDS,
            retry_seconds=settings.retry_seconds,
            absent_seconds=ABSENT_SECONDS,
            page=settings.list_page,
            resume=True,  # a watch that ran its course goes on from where it was, unlisted
        )
        self._reconciler = Reconciler(
            ReconcileParts(
                self._objects,
                self.cache,
                self.queue,
                marks,
                metrics,
                self.throttle,
                self.backoff,
                leading,
                clock,
                prober,
                settings.gateway_url,
            )
        )

    def watch(self, kind: Kind, stop: threading.Event) -> None:
        """List and watch `kind` until `stop`; every change queues its ModelDeployment."""
        watch(
            lambda: self._api,
            kind.watched(self._settings.namespace),
            KindWatch(kind, self._watching),
            stop,
            self._timing,
            keep=held,  # compacted as decoded: a page at a time, never the whole list twice
        )

    def resync(self) -> None:
        """Queue every ModelDeployment (the periodic level-triggered pass)."""
        resync(self.cache, self.queue)

    def registry(self) -> ProviderRegistry:
        return self._reconciler.registry()

    def status_of(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status `obj` (a stored ModelDeployment) should have now (Reconciler.status_of)."""
        return self._reconciler.status_of(obj)

    def reconcile(self, key: tuple[str, str]) -> str:
        """Write the status of ModelDeployment `key` if it changed; the outcome's name."""
        return self._reconciler.reconcile(key)

    def work(self, stop: threading.Event) -> None:
        """The worker (Reconciler.work) until `stop`."""
        self._reconciler.work(stop)

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
