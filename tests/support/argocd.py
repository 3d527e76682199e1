"""Argo CD's application-controller and repo-server as local processes against a test API server.

Built by `make cluster` (tests/cluster/argocd.py) as one slim binary with a miniredis
subcommand, at ARGOCD_VERSION with a master gitops-engine (the release's is not served). Every
address is 127.0.0.1 on a free port. The repo-server runs plain gRPC (`--disable-tls`) with
`git`, the pinned `kustomize` and Argo CD's git-verify-wrapper.sh on PATH and GPG off; the
controller reaches the API server through the test kubeconfig, with `https://kubernetes.default.svc`
mapped to it (ARGOCD_FAKE_IN_CLUSTER). No argocd-server runs, so what it would create is created
here: the `argocd` namespace, `argocd-cm` (with the shipped health checks merged in, as the
shipped kustomize/argocd/argocd-cm-health.yaml tells users to), `argocd-secret` and the
`default` AppProject. Stopped by PID.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from kubeio.yamlio import dump_all
from tests.support.cluster import ROOT, Cluster, _get, binaries_dir, free_port, terminate
from tests.support.wait import wait_until

NAMESPACE = "argocd"
START_TIMEOUT = 90
BINARIES = ("argocd", "kustomize", "git-verify-wrapper.sh")
HEALTH = ROOT / "kustomize" / "argocd" / "argocd-cm-health.yaml"


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if not (binaries_dir() / name).exists()]


@dataclass
class ArgoCD:
    workdir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: list[IO[bytes]] = field(default_factory=list)

    def log_tail(self, name: str, limit: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-limit:] if path.exists() else ""

    def alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")

    def stop(self) -> None:
        for proc in reversed(self.processes.values()):
            terminate(proc)
        for log in self.logs:
            log.close()


def setup_objects() -> list[dict[str, Any]]:
    """What argocd-server and the install manifests would create, with the shipped health Lua."""
    health = yaml.safe_load(HEALTH.read_text())["data"]
    meta = {"namespace": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "argocd"}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", **meta},
            "data": health,
        },
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "argocd-secret", **meta}},
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": "default", "namespace": NAMESPACE},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    ]


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _argv(cluster: Cluster, ports: dict[str, int]) -> dict[str, list[str]]:
    argocd, redis = str(binaries_dir() / "argocd"), f"127.0.0.1:{ports['redis']}"
    return {
        "redis": [argocd, "redis", redis],
        "repo-server": [
            argocd,
            "repo-server",
            "--address=127.0.0.1",
            f"--port={ports['repo-server']}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={ports['repo-server-metrics']}",
            f"--redis={redis}",
            "--disable-tls",
            "--client-ca-path=",
            "--loglevel=info",
        ],
        "application-controller": [
            argocd,
            "application-controller",
            f"--namespace={NAMESPACE}",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--redis={redis}",
            f"--repo-server=127.0.0.1:{ports['repo-server']}",
            "--repo-server-plaintext",
            f"--metrics-port={ports['controller-metrics']}",
            # Argo CD 3 keeps resource health out of the Application unless asked; without
            # argocd-server to read the resource tree, the tests read it there.
            "--persist-resource-health",
            "--status-processors=4",
            "--operation-processors=2",
            "--loglevel=info",
        ],
    }


def start_argocd(cluster: Cluster, workdir: Path) -> ArgoCD:
    """Redis, repo-server and application-controller running, in that order, each ready."""
    cluster.apply_manifests(dump_all(setup_objects()))
    names = ("redis", "repo-server", "repo-server-metrics", "controller-metrics")
    ports = {name: free_port() for name in names}
    env = {
        "PATH": f"{binaries_dir()}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(workdir),
        "KUBECONFIG": str(cluster.kubeconfig),
        "ARGOCD_FAKE_IN_CLUSTER": "true",
        "ARGOCD_GPG_ENABLED": "false",
    }
    argo = ArgoCD(workdir)
    ready = {
        "redis": lambda: _listening(ports["redis"]),
        "repo-server": lambda: _listening(ports["repo-server"]),
        "application-controller": lambda: _get(
            f"http://127.0.0.1:{ports['controller-metrics']}/metrics"
        ),
    }
    try:
        for name, argv in _argv(cluster, ports).items():
            log = (workdir / f"{name}.log").open("wb")
            argo.logs.append(log)
            argo.processes[name] = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )

            def up(name: str = name) -> bool:
                argo.alive()
                return ready[name]()

            wait_until(up, timeout=START_TIMEOUT, interval=0.5, what=f"Argo CD {name}")
    except BaseException:
        argo.stop()
        raise
    return argo
