"""The LeaderWorkerSet controller, built by `make cluster` from sigs.k8s.io/lws/cmd at LWS_VERSION
(tests/cluster/lws), running against the test API server as a local process.

LWS's manager serves admission webhooks it cannot run without: the pod webhook labels every pod
of a group with its indexes and sets LWS_LEADER_ADDRESS (pkg/webhooks/pod_webhook.go), which the
controllers read back (pkg/controllers/pod_controller.go), and the LeaderWorkerSet webhook fills
in its defaults. In a cluster its cert-controller rotates a certificate for an in-cluster
Service. Here, instead (cmd/main.go `apply` and `setupControllers` at the pin):
  - internalCertManagement.enable false in its configuration file, so no cert rotation; its
    webhook server listens on 127.0.0.1 with the test cluster's serving certificate (issued for
    127.0.0.1 by the cluster's CA), copied into its certDir as tls.crt and tls.key;
  - the webhooks of config/webhook/manifests.yaml at the pin are registered by URL
    (https://127.0.0.1:<port><path>, the cluster CA as caBundle) instead of by Service, and only
    for the test's namespaces (a namespaceSelector), so no other test's pods go through them;
  - leader election off; metrics off (bindAddress "0": its secure metrics server would ask the
    API server to review tokens); the health probe on a free loopback port.
The manager also runs the DisaggregatedSet controller, whose CRD Runway never renders: this tier
installs it from the module at the pin, as the KubeRay tier does RayJob's.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump, dump_all
from tests.cluster.build import LWS_MODULE, module_dir
from tests.support.cluster import Cluster, _get, binaries_dir, free_port, spawn, terminate
from tests.support.kuberay import _established
from tests.support.wait import wait_until

BINARY = "lws-controller"
WATCHED_ONLY_CRDS = ("config/crd/bases/disaggregatedset.x-k8s.io_disaggregatedsets.yaml",)
START_TIMEOUT = 90
# The label a test namespace carries to have its pods and LeaderWorkerSets go through the webhooks.
NAMESPACE_LABEL = "runway-test/lws"
WEBHOOKS = "runway-test-lws"
# (name, path, group, resource, operations) from config/webhook/manifests.yaml at the pin.
MUTATING = (
    ("mleaderworkerset.kb.io", "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
     "leaderworkerset.x-k8s.io", "leaderworkersets", ["CREATE", "UPDATE"]),
    ("mpod.kb.io", "/mutate--v1-pod", "", "pods", ["CREATE"]),
)  # fmt: skip
VALIDATING = (
    ("vleaderworkerset.kb.io", "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
     "leaderworkerset.x-k8s.io", "leaderworkersets", ["CREATE", "UPDATE"]),
    ("vpod.kb.io", "/validate--v1-pod", "", "pods", ["CREATE", "UPDATE"]),
)  # fmt: skip


def unavailable_reason() -> str | None:
    """Why the tier cannot run here, or None (a missing binary: `make cluster` was not run)."""
    if (binaries_dir() / BINARY).exists():
        return None
    return f"{BINARY} not built in {binaries_dir()}; run `make cluster`" + (
        "" if shutil.which("go") else " (needs Go)"
    )


def install_watched_crds(cluster: Cluster) -> None:
    source = module_dir(LWS_MODULE, bundled_versions().as_env()["LWS_VERSION"])
    for name in WATCHED_ONLY_CRDS:
        cluster.apply_manifests((source / name).read_text())
    name = "disaggregatedsets.disaggregatedset.x-k8s.io"
    wait_until(lambda: _established(cluster, name), timeout=60, what=f"{name} CRD")


def _config(workdir: Path, webhook: int, probe: int) -> Path:
    certs = workdir / "webhook-certs"
    certs.mkdir(exist_ok=True)
    return _write(
        workdir / "lws-config.yaml",
        {
            "apiVersion": "config.lws.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": webhook, "host": "127.0.0.1", "certDir": str(certs)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
        },
    )


def _write(path: Path, obj: dict[str, Any]) -> Path:
    path.write_text(dump(obj))
    return path


def webhook_configurations(cluster: Cluster, port: int) -> list[dict[str, Any]]:
    """LWS's webhooks, by URL on loopback, for namespaces labelled NAMESPACE_LABEL only."""
    ca = base64.b64encode((cluster.pki / "ca.pem").read_bytes()).decode()

    def hooks(table: tuple[tuple[str, str, str, str, list[str]], ...]) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "true"}},
                "rules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["v1"],
                        "operations": operations,
                        "resources": [resource],
                    }
                ],
            }
            for name, path, group, resource, operations in table
        ]

    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": WEBHOOKS},
            "webhooks": hooks(table),
        }
        for kind, table in (
            ("MutatingWebhookConfiguration", MUTATING),
            ("ValidatingWebhookConfiguration", VALIDATING),
        )
    ]


def start_controller(cluster: Cluster, workdir: Path) -> None:
    """The controller, started as one of the cluster's processes (BINARY: `cluster.alive`,
    its log in the cluster's folder), answering its readiness probe, its webhooks registered."""
    webhook, probe = free_port(), free_port()
    config = _config(workdir, webhook, probe)
    certs = workdir / "webhook-certs"
    shutil.copyfile(cluster.pki / "serving-cert.pem", certs / "tls.crt")
    shutil.copyfile(cluster.pki / "serving-key.pem", certs / "tls.key")
    spawn(
        cluster,
        BINARY,
        [
            str(binaries_dir() / BINARY),
            f"--config={config}",
            f"--kubeconfig={cluster.kubeconfig}",
            "--zap-devel=false",
        ],
    )
    wait_until(
        lambda: cluster.alive(BINARY) and _get(f"http://127.0.0.1:{probe}/readyz"),
        timeout=START_TIMEOUT,
        what=f"{BINARY} /readyz",
    )
    cluster.apply_manifests(dump_all(webhook_configurations(cluster, webhook)))


def stop_controller(cluster: Cluster) -> int:
    """Remove the webhooks (no pod of another test may wait on them), then stop the controller;
    its exit status."""
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        cluster.kubectl("delete", kind, WEBHOOKS, "--ignore-not-found", check=False)
    return terminate(cluster.processes[cluster.names.index(BINARY)])
