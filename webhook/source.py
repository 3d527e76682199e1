"""Where the webhook's InferenceProviderConfigs come from: fixed files, or a cluster watch.

Only configs whose status.ready is true take part in automatic selection; a config without a
status counts as ready (see core/model/kinds.py). A cluster source lists, then watches, and
lists again when the watch ends (the server closes it every `watch_seconds`, or answers 410
Gone) or fails (then after `retry_seconds`).

Readiness: the data is current while a watch is open and the API server answers, and was
current when the last list succeeded or the last watch ended. The source is ready once the first
list succeeded, as long as no more than `stale_seconds` passed without the data being current,
and while the API server answers: a heartbeat (GET /version) every `heartbeat_seconds`, which
must be answered within ANSWER_SECONDS. An open watch alone proves nothing: an API server that is
frozen (SIGSTOP, a hung process, a black-holed connection) keeps the connection open and sends
nothing. One unanswered heartbeat makes the source unready at once, whatever `stale_seconds`
says, until the API server answers again (a heartbeat, a list or a watch event), so a silent
API server is noticed within `heartbeat_seconds` + ANSWER_SECONDS (10 s by default). A normal
watch restart never makes it unready; a watch that keeps failing does, `stale_seconds` after
the last moment the data was known current; a watch silent WATCH_GRACE_SECONDS past its
server-side timeout counts as failed.
"""

from __future__ import annotations

import logging
import threading
import time
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
STALE_SECONDS = 60.0  # default bound; `runway serve --stale-seconds`
CONNECT_SECONDS = 10.0
LIST_SECONDS = 30.0  # a list that has not answered by then failed
WATCH_GRACE_SECONDS = 30.0  # a watch silent this long past its server-side timeout is dead
HEARTBEAT_SECONDS = 5.0  # how often the API server is asked whether it answers
ANSWER_SECONDS = 5.0  # a heartbeat not answered by then: the API server is silent
GONE = 410  # the watch's resourceVersion is too old: list again, a normal restart


class ProviderSource(Protocol):
    def current(self) -> ProviderRegistry | None: ...
    def is_ready(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


class WatchObserver(Protocol):
    """What the source reports (webhook/metrics.py counts it)."""

    def source_ready(self, ready: bool) -> None: ...
    def watch_restarted(self, outcome: str) -> None: ...


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
    """InferenceProviderConfigs from the API server: list, then watch; list again when it ends."""

    def __init__(
        self,
        client_factory: Callable[[], kubernetes.client.ApiClient],
        *,
        watch_seconds: int = 300,
        retry_seconds: float = 2.0,
        stale_seconds: float = STALE_SECONDS,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        flags: Mapping[str, FlagCatalog] | None = None,
        observer: WatchObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_factory = client_factory
        self._flags = dict(flags or {})
        self._facts = bundled_facts()  # read once: every rebuild hands the same facts on
        self._watch_seconds = watch_seconds
        self._retry_seconds = retry_seconds
        self._stale_seconds = stale_seconds
        self._heartbeat_seconds = heartbeat_seconds
        self._silent = False  # the last heartbeat went unanswered, and nothing answered since
        self._observer = observer
        self._clock = clock
        self._lock = threading.Lock()
        self._registry: ProviderRegistry | None = None
        self._watching = False  # a watch is open: the data is current now
        self._current_at = 0.0  # when the data was last known current (clock seconds)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> ProviderRegistry | None:
        with self._lock:
            return self._registry

    def is_ready(self) -> bool:
        with self._lock:
            if self._registry is None or self._silent:
                return False
            return self._watching or self._clock() - self._current_at <= self._stale_seconds

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="provider-config-watch", daemon=True)
        self._thread.start()
        if self._heartbeat_seconds > 0:
            threading.Thread(
                target=self._heartbeats, name="provider-config-heartbeat", daemon=True
            ).start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            started = self._clock()
            try:
                client = self._client_factory()
            except kubernetes.config.ConfigException as err:
                # A kubeconfig naming a missing file or key: said once per try, never a traceback;
                # the source stays unready (admission fails closed) and tries again.
                log.error("provider config watch cannot build its client; retrying: %s", err)
                outcome = "failed"
            else:
                outcome = self._watch_once(client)
            self._watch_ended()
            self._report(outcome)
            # A failure waits before trying again; so does a watch the server ended at once
            # (never a busy loop of lists), but a watch that ran its course restarts now.
            if outcome == "failed" or self._clock() - started < self._retry_seconds:
                self._stopping.wait(self._retry_seconds)
                self._report(None)

    def _heartbeats(self) -> None:
        """Ask the API server every `heartbeat_seconds` whether it answers (any HTTP answer
        does); an unanswered heartbeat makes the source silent, hence unready."""
        client: kubernetes.client.ApiClient | None = None
        while not self._stopping.wait(self._heartbeat_seconds):
            try:
                client = client or self._client_factory()
                # Through the client's own connection pool (its TLS settings), but with no
                # retries: the client retries a read timeout three times (20 s, not 5).
                client.rest_client.pool_manager.request(
                    "GET",
                    f"{client.configuration.host}/version",
                    timeout=urllib3.Timeout(connect=ANSWER_SECONDS, read=ANSWER_SECONDS),
                    retries=False,
                    preload_content=True,
                )
                answered = True  # any HTTP answer, 401 or 403 too: the server answers
            except (urllib3.exceptions.HTTPError, OSError, kubernetes.config.ConfigException):
                answered = False
            with self._lock:
                changed = self._silent == answered
                self._silent = not answered
            if changed:
                log.warning(
                    "the API server %s",
                    "answers again" if answered else f"did not answer within {ANSWER_SECONDS} s",
                )
                self._report(None)

    def _answered(self) -> None:  # the lock is held
        self._silent = False

    def _watch_once(self, client: kubernetes.client.ApiClient) -> str:
        """One list and watch: "ended" when the watch ran its course, "failed" when not."""
        try:
            self._sync(kubernetes.client.CustomObjectsApi(client))
        except (
            kubernetes.client.ApiException,
            urllib3.exceptions.HTTPError,
            OSError,
            ValueError,
        ) as err:
            log.warning("provider config watch failed; retrying: %s", type(err).__name__)
            return "failed"
        return "ended"

    def _sync(self, api: kubernetes.client.CustomObjectsApi) -> None:
        listed: dict[str, Any] = api.list_cluster_custom_object(
            GROUP,
            VERSION,
            INFERENCE_PROVIDER_CONFIG_PLURAL,
            _request_timeout=(CONNECT_SECONDS, LIST_SECONDS),
        )  # type: ignore[assignment]  # the client's stubs say object; it returns the decoded JSON dict
        objects = {item["metadata"]["name"]: item for item in listed.get("items", [])}
        self._publish(objects, watching=True)
        self._report(None)
        log.info("provider configs listed count=%d", len(objects))
        watch = kubernetes.watch.Watch()
        try:
            for event in watch.stream(
                api.list_cluster_custom_object,
                GROUP,
                VERSION,
                INFERENCE_PROVIDER_CONFIG_PLURAL,
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=self._watch_seconds,
                _request_timeout=(CONNECT_SECONDS, self._watch_seconds + WATCH_GRACE_SECONDS),
            ):
                if self._stopping.is_set():
                    watch.stop()
                    return
                kind: str = event["type"]
                obj: dict[str, Any] = event["object"]
                name = obj["metadata"]["name"]
                if kind == "DELETED":
                    objects.pop(name, None)
                else:
                    objects[name] = obj
                self._publish(objects, watching=True)
                log.info("provider config %s name=%s", kind.lower(), name)
        except kubernetes.client.ApiException as err:
            if err.status != GONE:  # 410: our resourceVersion is too old; list again
                raise

    def _publish(self, objects: dict[str, dict[str, Any]], *, watching: bool) -> None:
        registry = build_registry(
            (objects[n] for n in sorted(objects)), flags=self._flags, facts=self._facts
        )
        for problem in registry.problems:
            log.warning("provider config problem: %s", problem)
        with self._lock:
            self._registry = registry
            self._watching = watching
            self._current_at = self._clock()
            self._answered()

    def _watch_ended(self) -> None:
        """The data was current up to now if a watch was open until now."""
        with self._lock:
            if self._watching:
                self._current_at = self._clock()
            self._watching = False

    def _report(self, outcome: str | None) -> None:
        if self._observer is None:
            return
        if outcome is not None:
            self._observer.watch_restarted(outcome)
        self._observer.source_ready(self.is_ready())
