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
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.cluster.flux import KUSTOMIZE, SOURCE, crds_dir
from tests.support.cluster import Cluster, binaries_dir, free_port
from tests.support.wait import wait_until

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
