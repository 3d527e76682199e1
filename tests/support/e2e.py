"""The e2e tier: a real kube-apiserver + etcd (see tests/support/cluster.py).

Set RUNWAY_E2E_KUBECONFIG to run the tier against an existing cluster instead of starting one:
the tests then install Runway's CRDs and the cached upstream CRDs there and create namespaces.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from kubeio.yamlio import dump_all
from tests.support.cluster import (
    Cluster,
    binaries_dir,
    install_crds,
    missing_binaries,
    start_cluster,
)
from tests.support.live import missing_binaries as missing_live_binaries
from tests.support.live import start_live_cluster
from tests.support.webhook import Webhook, start_webhook


def unavailable(message: str) -> None:
    """In CI a tier that cannot run fails; by hand it is skipped, loudly."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    warnings.warn(message, stacklevel=2)
    pytest.skip(message)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = os.environ.get("RUNWAY_E2E_KUBECONFIG")
    if external:
        existing = Cluster(Path(external), "", tmp_path_factory.mktemp("cluster"))
        install_crds(existing)
        yield existing
        return
    missing = missing_binaries()
    if missing:
        unavailable(
            f"e2e tier: {', '.join(missing)} not built in {binaries_dir()}; run `make cluster` (needs Go)"
        )
    started = start_cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A second test cluster with a live control plane and fake GPU nodes (tests/support/live.py);
    the bare `cluster` stays for the tests that need only the API server."""
    missing = missing_binaries() + missing_live_binaries()
    if missing:
        unavailable(
            f"live tier: {', '.join(missing)} not built in {binaries_dir()}; run `make cluster`"
        )
    started = start_live_cluster(tmp_path_factory.mktemp("live"))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def api(cluster: Cluster) -> Iterator[kubernetes.client.ApiClient]:
    client = cluster.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    """A fresh namespace per test (left Terminating: no namespace controller runs here)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


LABEL = {"runway.test/webhook": "enabled"}
RUNWAY = Path(sys.executable).parent / "runway"


def configurations(url: str) -> list[dict[str, Any]]:
    def hook(
        name: str,
        path: str,
        resource: str,
        group: str = "airunway.ai",
        *,
        cluster_scoped: bool = False,
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": name,
            "clientConfig": {"url": f"{url}{path}"},
            "rules": [
                {
                    "apiGroups": [group],
                    "apiVersions": ["v1alpha1"],
                    "resources": [resource],
                    "operations": ["CREATE", "UPDATE"],
                }
            ],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
        }
        entry["objectSelector" if cluster_scoped else "namespaceSelector"] = {"matchLabels": LABEL}
        return entry

    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "runway-test"},
            "webhooks": [
                hook("mutate.modeldeployments.airunway.ai", "/mutate", "modeldeployments")
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "runway-test"},
            "webhooks": [
                hook("validate.modeldeployments.airunway.ai", "/validate", "modeldeployments"),
                hook(
                    "validate.inferenceproviderconfigs.airunway.ai",
                    "/validate-inferenceproviderconfig",
                    "inferenceproviderconfigs",
                    cluster_scoped=True,
                ),
                hook(
                    "validate.externalmodelproviders.gateway.tokenfactory.mirantis.com",
                    "/validate-externalmodelprovider",
                    "externalmodelproviders",
                    "gateway.tokenfactory.mirantis.com",
                ),
            ],
        },
    ]


@contextlib.contextmanager
def registered_webhook(cluster: Cluster, workdir: Path) -> Iterator[Webhook]:
    """`runway serve` registered on `cluster` for labelled namespaces, its CA injected."""
    # -v: allowed admissions are logged too (at DEBUG), which the GitOps tests read
    server = start_webhook(workdir, args=["-v"])
    manifests = dump_all(configurations(server.url))
    try:
        cluster.apply_manifests(manifests)
        injected = subprocess.run(
            [
                str(RUNWAY),
                "certs",
                "inject",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--ca",
                str(server.certs / "ca.crt"),
                "--mutating",
                "runway-test",
                "--validating",
                "runway-test",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (injected.returncode, injected.stderr) == (0, ""), injected.stderr
        assert injected.stdout.splitlines() == [
            "caBundle set on MutatingWebhookConfiguration/runway-test",
            "caBundle set on ValidatingWebhookConfiguration/runway-test",
        ]
        yield server
    finally:
        cluster.kubectl(
            "delete",
            "mutatingwebhookconfiguration/runway-test",
            "validatingwebhookconfiguration/runway-test",
            "--ignore-not-found",
            check=False,
        )
        assert server.stop() == 0


@pytest.fixture(scope="session")
def registered(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    with registered_webhook(cluster, tmp_path_factory.mktemp("admission")) as server:
        yield server


@pytest.fixture(scope="session")
def live_registered(
    live_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    """The webhook registered on the live cluster (the Argo CD tier syncs through it)."""
    with registered_webhook(live_cluster, tmp_path_factory.mktemp("live-admission")) as server:
        yield server
