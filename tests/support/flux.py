"""Flux source-controller and kustomize-controller as local processes against the test API server.

Built by `make cluster` (tests/cluster/flux.py). Both run with leader election off and every
address on 127.0.0.1: source-controller serves artifacts from a temporary --storage-path on a
free loopback port and advertises that address, so kustomize-controller fetches from it. Metrics
and health endpoints take free loopback ports too. Stopped by PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.cluster.flux import KUSTOMIZE, SOURCE, crds_dir
from tests.support.cluster import Cluster, binaries_dir, free_port
from tests.support.gitops_tier import Tier
from tests.support.status import InProcess
from tests.support.wait import wait_until

SYNC_TIMEOUT = 120
RENUDGE = 20  # seconds between reconcile requests while a revision waits to be applied

START_TIMEOUT = 90
CONTROLLERS = (SOURCE.name, KUSTOMIZE.name)


def missing_controllers() -> list[str]:
    return [name for name in CONTROLLERS if not (binaries_dir() / name).exists()]


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@dataclass
class Flux:
    cluster: Cluster
    workdir: Path
    storage: str  # host:port of source-controller's artifact server
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: list[IO[bytes]] = field(default_factory=list)

    def log_tail(self, name: str, limit: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-limit:] if path.exists() else ""

    def log_lines(self, name: str) -> list[dict[str, Any]]:
        """The controller's JSON log lines."""
        path = self.workdir / f"{name}.log"
        lines = []
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                lines.append(json.loads(line))
        return lines

    def alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for log in self.logs:
            log.close()


def install_flux_crds(cluster: Cluster) -> None:
    files = sorted(crds_dir(Path(binaries_dir()).parent).glob("*.yaml"))
    if not files:
        raise AssertionError(
            f"no Flux CRDs in {crds_dir(binaries_dir().parent)}; run `make cluster`"
        )
    names = []
    for path in files:
        text = path.read_text()
        names += [
            d["metadata"]["name"]
            for d in yaml.safe_load_all(text)
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ]
        cluster.apply_manifests(text)
    cluster.wait_established(names)


def start_flux(cluster: Cluster, workdir: Path) -> Flux:
    """Both controllers running and ready, watching every namespace of the test API server."""
    install_flux_crds(cluster)
    cluster.kubectl("create", "namespace", "flux-system", check=False)
    storage = f"127.0.0.1:{free_port()}"
    (workdir / "storage").mkdir()  # source-controller refuses a missing --storage-path
    flux = Flux(cluster, workdir, storage)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "KUBECONFIG": str(cluster.kubeconfig),
        "RUNTIME_NAMESPACE": "flux-system",
    }
    common = ["--enable-leader-election=false", "--log-level=debug", "--log-encoding=json"]
    health = {name: free_port() for name in CONTROLLERS}
    argv = {
        SOURCE.name: [
            f"--storage-path={workdir / 'storage'}",
            f"--storage-addr={storage}",
            f"--storage-adv-addr={storage}",
        ],
        KUSTOMIZE.name: [],
    }
    try:
        for name in CONTROLLERS:
            log = (workdir / f"{name}.log").open("wb")
            flux.logs.append(log)
            flux.processes[name] = subprocess.Popen(
                [
                    str(binaries_dir() / name),
                    *common,
                    f"--metrics-addr=127.0.0.1:{free_port()}",
                    f"--health-addr=127.0.0.1:{health[name]}",
                    *argv[name],
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
        for name in CONTROLLERS:

            def ready(name: str = name) -> bool:
                flux.alive()
                return _healthy(health[name])

            wait_until(ready, timeout=START_TIMEOUT, interval=0.5, what=f"{name} /readyz")
    except BaseException:
        flux.stop()
        raise
    return flux


KS = ("kustomization.kustomize.toolkit.fluxcd.io/runway-models", "-n", "flux-system")


GITREPO = ("gitrepository.source.toolkit.fluxcd.io/runway-gitops", "-n", "flux-system")


def until(predicate: Callable[[], dict[str, Any] | None], what: str) -> dict[str, Any]:
    """Poll a controller-driven state (reconciles are seconds apart, a health check 5 s)."""
    found = wait_until(predicate, timeout=SYNC_TIMEOUT, interval=0.5, what=what)
    assert found is not None
    return found


@dataclass
class GitOps(Tier):
    flux: Flux
    status: InProcess

    def push(self, sources: Path) -> str:
        """`runway render --push`; the revision Flux will report for the pushed head."""
        return f"main@sha1:{self.render_and_push(sources)}"

    def kustomization(self) -> dict[str, Any]:
        return self.get(*KS)

    def request_reconcile(self, *what: str) -> str:
        token = uuid.uuid4().hex
        self.cluster.kubectl(
            "annotate", *what, f"reconcile.fluxcd.io/requestedAt={token}", "--overwrite"
        )
        return token

    def ready(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        ready = [c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
        return ready[0] if ready else None

    def synced(self, revision: str) -> dict[str, Any]:
        """Push has landed: the source has the revision, the Kustomization applied it (Ready)."""
        self.request_reconcile(*GITREPO)

        def source_has_it() -> bool:
            self.flux.alive()
            artifact = self.get(*GITREPO).get("status", {}).get("artifact", {})
            return bool(artifact.get("revision") == revision)

        wait_until(source_has_it, timeout=SYNC_TIMEOUT, interval=0.5, what=f"source {revision}")

        asked = [time.monotonic()]

        def applied() -> dict[str, Any] | None:
            self.flux.alive()
            self.stand_in_for_kuberay()
            ks = self.kustomization()
            condition = self.ready(ks)
            done = (
                ks.get("status", {}).get("lastAppliedRevision") == revision
                and condition is not None
                and condition["status"] == "True"
            )
            if not done and time.monotonic() - asked[0] > RENUDGE:
                # Flux retries a failed Kustomization at its retry interval (minutes): a
                # request stands in for it, again while the revision is not applied (a request
                # handled by a reconcile already under way, waiting on health checks, starts
                # none; under load that left the recovery test waiting past its timeout).
                self.request_reconcile(*KS)
                asked[0] = time.monotonic()
            return ks if done else None

        return until(applied, f"{revision} applied")

    def reconciled(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Force one reconcile of the Kustomization without a Git change; the Kustomization
        afterwards and the controller's log lines for that reconcile."""
        start = len(self.flux.log_lines("kustomize-controller"))
        token = self.request_reconcile(*KS)

        def handled() -> dict[str, Any] | None:
            self.flux.alive()
            ks = self.kustomization()
            return ks if ks.get("status", {}).get("lastHandledReconcileAt") == token else None

        ks = until(handled, "a forced reconcile")
        return ks, self.flux.log_lines("kustomize-controller")[start:]

    def events(self) -> list[tuple[str, str, int]]:
        """Events kustomize-controller recorded on the Kustomization: (reason, message, count)."""
        listed = self.get("events", "-n", "flux-system")["items"]
        return sorted(
            (e["reason"], e["message"], e.get("count") or 1)
            for e in listed
            if e["involvedObject"]["name"] == "runway-models"
            and e["involvedObject"]["kind"] == "Kustomization"
        )
