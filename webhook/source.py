"""Where the webhook's InferenceProviderConfigs come from: fixed files, or a cluster watch.

Only configs whose status.ready is true take part in automatic selection; a config without a
status counts as ready (see core/model/kinds.py). A cluster source lists, then watches; on any
error it marks itself stale (readyz turns false), waits, and lists again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import kubernetes
import urllib3

from core.checks.flags import FlagCatalog
from core.model.kinds import GROUP, INFERENCE_PROVIDER_CONFIG_PLURAL, VERSION
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_facts

log = logging.getLogger(__name__)


class ProviderSource(Protocol):
    def current(self) -> ProviderRegistry | None: ...
    def is_ready(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


class StaticSource:
    """A registry loaded once (shipped configs or directories)."""

    def __init__(self, registry: ProviderRegistry) -> None:
        self._registry = registry

    def current(self) -> ProviderRegistry:
        return self._registry

    def is_ready(self) -> bool:
        return True

    def start(self) -> None:
        for problem in self._registry.problems:
            log.warning("provider config problem: %s", problem)

    def stop(self) -> None:
        return None


class ClusterSource:
    """InferenceProviderConfigs from the API server: list, then watch; re-list after errors."""

    def __init__(
        self,
        client_factory: Callable[[], kubernetes.client.ApiClient],
        *,
        watch_seconds: int = 300,
        retry_seconds: float = 2.0,
        flags: Mapping[str, FlagCatalog] | None = None,
    ) -> None:
        self._client_factory = client_factory
        self._flags = dict(flags or {})
        self._facts = bundled_facts()  # read once: every rebuild hands the same facts on
        self._watch_seconds = watch_seconds
        self._retry_seconds = retry_seconds
        self._lock = threading.Lock()
        self._registry: ProviderRegistry | None = None
        self._stale = True
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> ProviderRegistry | None:
        with self._lock:
            return self._registry

    def is_ready(self) -> bool:
        with self._lock:
            return self._registry is not None and not self._stale

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="provider-config-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                client = self._client_factory()
                self._sync(kubernetes.client.CustomObjectsApi(client))
            except (
                kubernetes.client.ApiException,
                urllib3.exceptions.HTTPError,
                OSError,
                ValueError,
            ) as err:
                log.warning("provider config watch failed; retrying: %s", type(err).__name__)
            with self._lock:
                self._stale = True
            self._stopping.wait(self._retry_seconds)

    def _sync(self, api: kubernetes.client.CustomObjectsApi) -> None:
        listed: dict[str, Any] = api.list_cluster_custom_object(
            GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL
        )  # type: ignore[assignment]  # the client's stubs say object; it returns the decoded JSON dict
        objects = {item["metadata"]["name"]: item for item in listed.get("items", [])}
        self._publish(objects, stale=False)
        log.info("provider configs listed count=%d", len(objects))
        watch = kubernetes.watch.Watch()
        for event in watch.stream(
            api.list_cluster_custom_object,
            GROUP,
            VERSION,
            INFERENCE_PROVIDER_CONFIG_PLURAL,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=self._watch_seconds,
        ):
            if self._stopping.is_set():
                watch.stop()
                return
            kind: str = event["type"]
            obj: dict[str, Any] = event["object"]
            if kind == "ERROR":
                return  # e.g. 410 Gone: list again
            name = obj["metadata"]["name"]
            if kind == "DELETED":
                objects.pop(name, None)
            else:
                objects[name] = obj
            self._publish(objects, stale=False)
            log.info("provider config %s name=%s", kind.lower(), name)

    def _publish(self, objects: dict[str, dict[str, Any]], *, stale: bool) -> None:
        registry = build_registry(
            (objects[n] for n in sorted(objects)), flags=self._flags, facts=self._facts
        )
        for problem in registry.problems:
            log.warning("provider config problem: %s", problem)
        with self._lock:
            self._registry = registry
            self._stale = stale
