"""The Runway status controller run in the test process against a test API server (the same
`controller.run.start` the `runway status-controller` command runs), with short Lease and
dry-run timings so that takeovers and classifications are quick to see."""

from __future__ import annotations

import threading
from typing import Any

import kubernetes

from controller.classify import ProbeSettings
from controller.lease import LeaseSettings
from controller.observe import ObserveSettings
from controller.run import ControllerSettings, Running, start, wait

LEASE, RENEW = 4.0, 1.0  # seconds: short, so that a takeover is quick to see
QUICK_DRY_RUNS = ProbeSettings(grace=2.0, every=5.0, per_minute=30, timeout=10.0)


def settings_for(
    namespace: str,
    identity: str,
    *,
    watch: str | None = None,
    health: float = 0.0,
    dry_runs: ProbeSettings = QUICK_DRY_RUNS,
) -> ControllerSettings:
    """A controller whose Lease lives in `namespace` and which watches `watch` (default: the
    same namespace); provider health only when `health` (seconds) is given, as provider configs
    are cluster-wide and other tests share them."""
    return ControllerSettings(
        lease=LeaseSettings(namespace, "runway-status", identity, LEASE, RENEW),
        observe=ObserveSettings(watch or namespace, "", watch_seconds=30, retry_seconds=0.5),
        probe_port=0,
        resync_seconds=30,
        health_seconds=health,
        dry_runs=dry_runs,
    )


def controller(
    api: kubernetes.client.ApiClient,
    namespace: str,
    identity: str,
    stop: threading.Event,
    *,
    watch: str | None = None,
    health: float = 0.0,
) -> Running:
    """A controller in this process until `stop` is set."""
    return start(api, settings_for(namespace, identity, watch=watch, health=health), stop)


class InProcess:
    """A status controller a test tier runs for its namespace, which a test can stop and start
    again (to look at what another status writer, `runway apply`, wrote without the controller
    correcting it)."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str) -> None:
        self._api = api
        self._settings = settings_for(namespace, "tests")
        self._stop = threading.Event()
        self.running: Running | None = None

    def start(self) -> None:
        self._stop = threading.Event()
        self.running = start(self._api, self._settings, self._stop)

    def stop(self) -> None:
        """Stop, and wait until the Lease is released and the last write is done."""
        if self.running is not None:
            self._stop.set()
            wait(self.running, self._settings, self._stop)
            self.running = None


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    """{condition type: status} of an object's status.conditions (empty before any status)."""
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}
