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
the last moment the data was known current; a watch silent kubeio.watch.GRACE_SECONDS past its
server-side timeout counts as failed. The list-watch loop itself is kubeio/watch.py's; this
source is what it reports to.
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
from kubeio.watch import Outcome, Watched, WatchTiming, watch

log = logging.getLogger(__name__)
STALE_SECONDS = 60.0  # default bound; `runway serve --stale-seconds`
LIST_SECONDS = 30.0  # a list that has not answered by then failed
HEARTBEAT_SECONDS = 5.0  # how often the API server is asked whether it answers
ANSWER_SECONDS = 5.0  # a heartbeat not answered by then: the API server is silent


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
        self._objects: dict[str, dict[str, Any]] = {}  # by name; the watch thread's own
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
        watch(
            self._client_factory,
            Watched(GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL),
            self,
            self._stopping,
            WatchTiming(
                watch_seconds=self._watch_seconds,
                list_seconds=LIST_SECONDS,
                retry_seconds=self._retry_seconds,
                absent_seconds=self._retry_seconds,
            ),
            clock=self._clock,
        )

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

    # --- what the watch loop (kubeio.watch) reports ---------------------------------------

    def listed(self, items: list[dict[str, Any]]) -> None:
        self._objects = {item["metadata"]["name"]: item for item in items}
        self._publish(watching=True)
        self._report(None)
        log.info("provider configs listed count=%d", len(self._objects))

    def changed(self, event: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event == "DELETED":
            self._objects.pop(name, None)
        else:
            self._objects[name] = obj
        self._publish(watching=True)
        log.info("provider config %s name=%s", event.lower(), name)

    def ended(self, outcome: Outcome, error: Exception | None) -> None:
        if isinstance(error, kubernetes.config.ConfigException):
            # A kubeconfig naming a missing file or key: said once per try, never a traceback;
            # the source stays unready (admission fails closed) and tries again.
            log.error("provider config watch cannot build its client; retrying: %s", error)
        elif error is not None:
            log.warning("provider config watch failed; retrying: %s", type(error).__name__)
        self._watch_ended()
        self._report("ended" if outcome is Outcome.ENDED else "failed")

    def waited(self) -> None:
        self._report(None)

    def _publish(self, *, watching: bool) -> None:
        objects = self._objects
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
