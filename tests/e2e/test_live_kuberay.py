"""The live tier for KubeRay: the real operator (built at KUBERAY_VERSION) turns each rendered
RayService into a RayCluster on the live cluster (tests/support/live.py), and its head and
worker pods are scheduled and Running: every GPU worker on a GPU node with the GPUs the
ModelDeployment asks for, and the CPU-only head on a GPU node only if the render lets it tolerate
the GPU taint. The namespace's `default`
ServiceAccount comes from the controller-manager, as in a real cluster.

KWOK starts no Ray process, so nothing here checks that Ray serves; the RayService stays
unready (the operator waits for the serve applications on the head's dashboard).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from tests.conftest import EXAMPLES
from tests.e2e.test_kuberay_operator import expected_pods, get_json, rayservice
from tests.support.cluster import Cluster
from tests.support.kuberay import (
    Operator,
    install_watched_crds,
    start_operator,
    unavailable_reason,
)
from tests.support.live import GPU
from tests.support.rayservices import kuberay_cases
from tests.support.wait import wait_until

RECONCILE_TIMEOUT = 180
CASES = kuberay_cases(EXAMPLES)


@pytest.fixture(scope="module")
def live_operator(
    live_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Operator]:
    reason = unavailable_reason()
    if reason is not None:
        assert shutil.which("go") is None, reason  # buildable here: never skipped
        pytest.fail(f"KubeRay live tier: {reason}", pytrace=False)
    install_watched_crds(live_cluster, bundled_versions())
    started = start_operator(live_cluster, tmp_path_factory.mktemp("kuberay-live"))
    try:
        yield started
    finally:
        assert started.stop() in (0, -15), started.log_tail()


def running_pods(cluster: Cluster, namespace: str, expected: int) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = get_json(cluster, "pods", "-n", namespace)["items"]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
    return running if len(running) == expected == len(pods) else []


def requested(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("requests", {}).get(GPU, 0))
        for c in pod["spec"]["containers"]
    )


def tolerates_gpu(pod: dict[str, Any]) -> bool:
    return any(t.get("key") == GPU for t in pod["spec"].get("tolerations", []))


@pytest.mark.parametrize(("case", "doc"), CASES, ids=[c for c, _ in CASES])
def test_rayservice_pods_run_on_the_nodes_their_gpus_need(
    live_cluster: Cluster,
    live_operator: Operator,
    shipped: ProviderRegistry,
    case: str,
    doc: dict[str, Any],
) -> None:
    namespace = f"ray-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    service = rayservice(doc, namespace, shipped)
    done = live_cluster.strict_apply(service)
    assert (done.returncode, done.stderr) == (0, "")
    expected = expected_pods(doc)

    def reconciled() -> list[dict[str, Any]]:
        live_operator.running()
        live_cluster.alive("kube-scheduler")
        return running_pods(live_cluster, namespace, len(expected))

    pods = wait_until(
        reconciled, timeout=RECONCILE_TIMEOUT, what=f"{len(expected)} Running Ray pods"
    )
    nodes = {
        n["metadata"]["name"]: int(n["status"]["capacity"].get(GPU, 0))
        for n in get_json(live_cluster, "nodes")["items"]
    }
    placed = sorted(
        (p["metadata"]["labels"]["ray.io/node-type"], requested(p), nodes[p["spec"]["nodeName"]])
        for p in pods
    )
    wanted = sorted(
        (kind, sum(int(v) for k, v in gpus if k == f"requests:{GPU}"))
        for kind, _, _, gpus in expected
    )

    assert [(kind, gpus) for kind, gpus, _ in placed] == wanted
    # GPU pods fit their node; a pod without GPUs is on a GPU node only if the render lets it
    # tolerate the GPU taint (spec.tolerations reach every pod, the head's too).
    assert [
        (p["metadata"]["name"], nodes[p["spec"]["nodeName"]] >= requested(p)) for p in pods
    ] == [(p["metadata"]["name"], True) for p in pods]
    assert [
        p["metadata"]["name"]
        for p in pods
        if requested(p) == 0 and nodes[p["spec"]["nodeName"]] > 0 and not tolerates_gpu(p)
    ] == []
    live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")
