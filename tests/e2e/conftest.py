"""The e2e tier: a real kube-apiserver + etcd (see tests/support/cluster.py).

Set RUNWAY_E2E_KUBECONFIG to run the tier against an existing cluster instead of starting one:
the tests then install Runway's CRDs and the cached upstream CRDs there and create namespaces.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from tests.support.cluster import (
    Cluster,
    binaries_dir,
    install_crds,
    missing_binaries,
    start_cluster,
)


def _unavailable(message: str) -> None:
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
        _unavailable(
            f"e2e tier: {', '.join(missing)} not built in {binaries_dir()}; run `make cluster` (needs Go)"
        )
    started = start_cluster(tmp_path_factory.mktemp("cluster"))
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
