"""The live tier for KubeRay: the real operator (built at KUBERAY_VERSION) turns each rendered
RayService into a RayCluster on the live cluster (tests/support/live.py), and its head and
worker pods are scheduled and Running: every GPU worker on a GPU node with the GPUs the
ModelDeployment asks for, and the CPU-only head on a GPU node only if the render lets it tolerate
the GPU taint. The namespace's `default`
ServiceAccount comes from the controller-manager, as in a real cluster.

A ModelDeployment with spec.model.storage gets its claims too (bound to PersistentVolumes the
test provides, as a cluster administrator would: no provisioner runs here), and a replica across
nodes (pipeline-parallel-size) gets its worker pods on as many GPU nodes, each mounting the
model cache like the head.

KWOK starts no Ray process, so nothing here checks that Ray serves; the RayService stays
unready (the operator waits for the serve applications on the head's dashboard).
"""

from __future__ import annotations

import copy
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump
from tests.support.cluster import Cluster
from tests.support.kuberay import (
    Operator,
    expected_pods,
    get_json,
    install_watched_crds,
    rendered,
    start_operator,
    unavailable_reason,
)
from tests.support.live import GPU, persistent_volume, render_and_apply
from tests.support.paths import EXAMPLES
from tests.support.rayservices import kuberay_cases
from tests.support.status import controller
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


def apply_rendered(
    cluster: Cluster, doc: dict[str, Any], namespace: str, registry: ProviderRegistry
) -> dict[str, Any]:
    """Apply the RayService and its claims, each claim with a PersistentVolume to bind to; the
    RayService back."""
    service, *claims = rendered(doc, namespace, registry)
    for claim in claims:
        size = claim["spec"]["resources"]["requests"]["storage"]
        name = f"{namespace}-{claim['metadata']['name']}"
        cluster.apply_manifests(dump(persistent_volume(name, size)))
    for obj in [*claims, service]:
        done = cluster.strict_apply(obj)
        assert (done.returncode, done.stderr) == (0, "")
    return service


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
    apply_rendered(live_cluster, doc, namespace, shipped)
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


def test_the_operators_own_rayservice_status_drives_the_model_deployment_status(
    live_cluster: Cluster, live_operator: Operator, tmp_path: Path
) -> None:
    """A KubeRay ModelDeployment rendered and applied with Runway's commands; the real operator
    makes its RayCluster and writes the RayService's status; Runway's status controller (in
    this process) maps that status. No Ray process runs under KWOK, so the serve application
    never starts: as far as it runs here, the model is Deploying, with the operator's counts,
    and Flux's kstatus and Argo CD's Lua read it as not serving."""
    namespace = f"ray-status-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    (case, doc), *_ = [(c, d) for c, d in CASES if c == "vllm-multi-gpu.yaml"]
    md = copy.deepcopy(doc)
    md["metadata"]["namespace"] = namespace
    name = md["metadata"]["name"]
    render_and_apply({"md.yaml": md}, tmp_path, live_cluster)
    stop = threading.Event()
    api = live_cluster.api_client()
    controller(api, namespace, "kuberay-live", stop)
    try:

        def reported() -> dict[str, Any] | None:
            live_operator.running()
            service = get_json(
                live_cluster,
                f"rayservice.ray.io/{name}",
                "-n",
                namespace,
                "--show-managed-fields",
            )
            model = get_json(live_cluster, f"modeldeployment.airunway.ai/{name}", "-n", namespace)
            status = model.get("status") or {}
            # The operator has written a status and the controller has mapped this one.
            written = bool(service.get("status", {}).get("conditions"))
            mapped = status.get("observedGeneration") == model["metadata"]["generation"]
            return {"service": service, "model": model} if written and mapped else None

        seen = wait_until(reported, timeout=RECONCILE_TIMEOUT, what="the operator's status mapped")
        assert seen is not None
    finally:
        stop.set()
        api.close()
        live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")

    service, model = seen["service"], seen["model"]
    managers = {
        m["manager"]
        for m in service["metadata"]["managedFields"]
        if m.get("subresource") == "status"
    }
    workers = sum(
        g.get("replicas", 0) for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    )
    status = model["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert managers == {"kuberay-operator"}, (case, managers)
    assert (status["phase"], status["replicas"]["desired"], status["endpoint"]) == (
        "Deploying",
        workers,
        {"service": f"{name}-serve-svc", "port": 8000},
    )
    assert status["message"].startswith(f"RayService/{name}: "), status["message"]
    assert (conditions["ResourceCreated"], conditions["Ready"], conditions["Reconciling"]) == (
        "True",
        "False",
        "True",
    )
    assert "Stalled" not in conditions


def test_a_replica_across_nodes_gets_its_worker_pods_each_with_the_model_cache(
    live_cluster: Cluster, live_operator: Operator, shipped: ProviderRegistry
) -> None:
    """examples/kuberay-multinode.yaml: one replica, pipeline parallel 2 over 8-GPU nodes. The
    operator's RayCluster has 2 workers in the GPU group; each runs on its own 8-GPU node, and
    the head and both workers mount the model-cache claim, bound, with HF_HOME at its mount."""
    (doc,) = [d for c, d in CASES if c == "kuberay-multinode.yaml"]
    namespace = f"ray-mn-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    service = apply_rendered(live_cluster, doc, namespace, shipped)
    name = service["metadata"]["name"]

    def placed() -> list[dict[str, Any]]:
        live_operator.running()
        return running_pods(live_cluster, namespace, 3)

    pods = wait_until(placed, timeout=RECONCILE_TIMEOUT, what="the head and 2 worker pods Running")
    (cluster,) = get_json(live_cluster, "rayclusters.ray.io", "-n", namespace)["items"]
    claims = get_json(live_cluster, "persistentvolumeclaims", "-n", namespace)["items"]
    live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")

    (group,) = cluster["spec"]["workerGroupSpecs"]
    assert (group["groupName"], group["replicas"], group["numOfHosts"]) == ("gpu-workers", 2, 1)
    assert cluster["metadata"]["ownerReferences"][0]["name"] == name
    cache = {"name": "model-cache", "persistentVolumeClaim": {"claimName": f"{name}-model-cache"}}
    mount = {"name": "model-cache", "mountPath": "/model-cache"}
    for pod in pods:
        (ray,) = [c for c in pod["spec"]["containers"] if c["name"].startswith("ray-")]
        assert cache in pod["spec"]["volumes"], pod["metadata"]["name"]
        assert mount in ray["volumeMounts"], pod["metadata"]["name"]
        assert {"name": "HF_HOME", "value": "/model-cache"} in ray["env"], pod["metadata"]["name"]
    workers = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    assert sorted(requested(p) for p in workers) == [8, 8]
    assert len({p["spec"]["nodeName"] for p in workers}) == 2  # one 8-GPU node each
    assert [(c["metadata"]["name"], c["status"]["phase"]) for c in claims] == [
        (f"{name}-model-cache", "Bound")
    ]
