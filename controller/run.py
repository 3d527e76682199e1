"""The entry point of the status flow: `run` starts the watches, the worker, the leader
election and the probe server, and runs until `stop` is set. Only the Lease holder writes; a
follower keeps its cache warm and takes over within the Lease's duration when the holder stops
renewing."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import kubernetes

from controller.classify import Prober, ProbeSettings
from controller.kinds import KINDS
from controller.lease import LeaderElector, LeaseSettings
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from controller.queue import Queue
from controller.serve import serve_probes
from controller.watching import WATCH_FAILURES
from kubeio.client import failure
from kubeio.shipped import bundled_versions

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    lease: LeaseSettings
    observe: ObserveSettings
    probe_host: str = "127.0.0.1"
    probe_port: int = 8081  # 0: any free port (tests)
    resync_seconds: float = 300.0
    health_seconds: float = 30.0  # how often provider health is checked (0: never)
    heartbeat_seconds: float = 60.0  # a provider config's status is rewritten at least this often
    dry_runs: ProbeSettings = field(default_factory=ProbeSettings)  # per_minute 0: never
    version: str = "runway"


@dataclass
class Running:
    """A started controller: what tests and the CLI look at."""

    observer: Observer
    metrics: Metrics
    elector: LeaderElector
    probe_port: int
    threads: list[threading.Thread]


def start(
    api: kubernetes.client.ApiClient,
    settings: ControllerSettings,
    stop: threading.Event,
    *,
    on_gateway_change: Callable[[], None] | None = None,
) -> Running:
    """Start every thread; they end when `stop` is set. `on_gateway_change` is called when a
    ModelDeployment, provider config or ExternalModelProvider changes what the gateway
    registers (the CLI wakes its gateway sync with it)."""
    metrics = Metrics()
    elector = LeaderElector(api, settings.lease)
    queue = Queue()  # the prober's answers queue their model again
    prober = (
        Prober(
            api,
            settings.dry_runs,
            bundled_versions(),
            on_probe=metrics.dry_run,
            on_answer=queue.add,
        )
        if settings.dry_runs.per_minute > 0
        else None
    )
    observer = Observer(
        api,
        settings.observe,
        metrics,
        lambda: elector.leading,
        on_gateway_change=on_gateway_change,
        prober=prober,
        queue=queue,
    )
    threads = [
        threading.Thread(
            target=observer.watch, args=(kind, stop), name=f"watch-{kind.kind}", daemon=True
        )
        for kind in KINDS
    ]
    threads += [
        threading.Thread(target=observer.work, args=(stop,), name=f"worker-{i}", daemon=True)
        for i in range(max(settings.observe.workers, 1))
    ]
    if prober is not None:
        threads.append(
            threading.Thread(target=prober.run, args=(stop,), name="dry-runs", daemon=True)
        )
    threads.append(
        threading.Thread(
            target=_lead,
            args=(_Parts(api, elector, observer, metrics, settings), stop),
            name="lease",
            daemon=True,
        )
    )
    for thread in threads:
        thread.start()
    server = serve_probes(
        settings.probe_host,
        settings.probe_port,
        healthy=lambda: all(t.is_alive() for t in threads) or stop.is_set(),
        ready=lambda: observer.cache.synced(KINDS),
        metrics=lambda: metrics.render(
            queue_depth=len(observer.queue), cached=observer.cache.counts()
        ),
    )

    def shut_down() -> None:
        stop.wait()
        server.shutdown()

    threading.Thread(target=shut_down, name="probes-stop", daemon=True).start()
    return Running(observer, metrics, elector, server.server_address[1], threads)


@dataclass(frozen=True, slots=True)
class _Parts:
    api: kubernetes.client.ApiClient
    elector: LeaderElector
    observer: Observer
    metrics: Metrics
    settings: ControllerSettings


def _lead(parts: _Parts, stop: threading.Event) -> None:
    """Renew (or try for) the Lease every `renew` seconds; resync on taking it over and every
    `resync_seconds` while leading; check provider health every `health_seconds` while leading."""
    api, elector, observer, metrics, settings = (
        parts.api,
        parts.elector,
        parts.observer,
        parts.metrics,
        parts.settings,
    )
    since_resync = 0.0
    since_health = settings.health_seconds  # at once on leading
    while not stop.is_set():
        was = elector.leading
        try:
            leading = elector.try_acquire_or_renew()
        except Exception as err:
            log.warning("status-controller: Lease: %s", err)
            elector.leading = leading = False
        metrics.leader = leading
        since_resync += settings.lease.renew
        if leading and (not was or since_resync >= settings.resync_seconds):
            observer.resync()
            since_resync = 0.0
        since_health += settings.lease.renew
        checking = settings.health_seconds > 0
        if (
            checking
            and leading
            and since_health >= settings.health_seconds
            and observer.cache.synced(KINDS)
        ):
            try:
                observer.check_providers(
                    api, version=settings.version, heartbeat=settings.heartbeat_seconds
                )
            except WATCH_FAILURES as err:
                observer.throttle.warning("provider health", failure(err))
            since_health = 0.0
        stop.wait(settings.lease.renew)
    elector.release()
    metrics.leader = False


def run(
    api: kubernetes.client.ApiClient,
    settings: ControllerSettings,
    stop: threading.Event,
    *,
    on_gateway_change: Callable[[], None] | None = None,
) -> Running:
    """Start, and return what runs (the CLI then waits on `stop`, set on SIGTERM or SIGINT)."""
    running = start(api, settings, stop, on_gateway_change=on_gateway_change)
    log.info("status-controller: probes on %s:%s", settings.probe_host, running.probe_port)
    return running


def wait(running: Running, settings: ControllerSettings, stop: threading.Event) -> None:
    """Until `stop`, then until the Lease is released and the workers have finished their writes (at
    most a renewal period and 5 s). The watches are daemon threads blocked in their streams:
    they end with the process."""
    stop.wait()
    deadline = time.monotonic() + settings.lease.renew + 5
    for thread in running.threads:
        if thread.name == "lease" or thread.name.startswith("worker"):
            thread.join(timeout=max(deadline - time.monotonic(), 0))
