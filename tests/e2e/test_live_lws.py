"""The live tier for multi-node llm-d and Direct vLLM: a ModelDeployment with
pipeline-parallel-size 2, rendered and applied with Runway's commands, rolls out as a
LeaderWorkerSet under the real LWS controller (built at LWS_VERSION, tests/support/lws.py) on the
live cluster (tests/support/live.py): the controller makes the leader StatefulSet and one worker
StatefulSet per group, the pods land on the fake GPU nodes with the GPUs they ask for and go
Ready under KWOK, and Runway's status controller (in this process) reports the model Running.

What stands in: KWOK runs no container, so no Ray process starts and no vLLM serves; a Ready pod
means scheduled with every object it needs. The LWS controller runs as a local process with its
webhooks on loopback, registered by URL for this test's namespaces only, with the test cluster's
serving certificate instead of its cert-controller's (tests/support/lws.py says how).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster
from tests.support.kuberay import get_json
from tests.support.live import GPU, render_and_apply
from tests.support.lws import (
    BINARY,
    NAMESPACE_LABEL,
    install_watched_crds,
    start_controller,
    stop_controller,
    unavailable_reason,
)
from tests.support.status import controller
from tests.support.wait import wait_until

ROLLOUT_TIMEOUT = 180
NODES, GROUPS, GPUS = 2, 2, 4  # pipeline-parallel-size, replicas, GPUs per pod
LWS_LABELS = "leaderworkerset.sigs.k8s.io"


@pytest.fixture(scope="module")
def lws_controller(
    live_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The live cluster with the LWS controller running (stopped, its webhooks removed, after
    this module)."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.fail(f"LeaderWorkerSet live tier: {reason}", pytrace=False)
    install_watched_crds(live_cluster)
    start_controller(live_cluster, tmp_path_factory.mktemp("lws-live"))
    try:
        yield live_cluster
    finally:
        assert stop_controller(live_cluster) in (0, -15), live_cluster.log_tail(BINARY)


def model(provider: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": f"{provider}-mn", "namespace": namespace},
        "spec": {
            "model": {"id": "Qwen/Qwen2.5-32B-Instruct", "servedName": "qwen-32b"},
            "provider": {"name": provider},
            "engine": {"type": "vllm", "args": {"pipeline-parallel-size": str(NODES)}},
            "resources": {"gpu": {"count": GPUS}},
            "scaling": {"replicas": GROUPS},
        },
    }


def served_by(cluster: Cluster, namespace: str, service: str) -> list[str]:
    """The pods the Service's EndpointSlices list, by name."""
    slices = get_json(
        cluster, "endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}"
    )["items"]
    return sorted(e["targetRef"]["name"] for s in slices for e in s.get("endpoints") or ())


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_a_model_across_nodes_rolls_out_as_a_leaderworkerset_and_reads_running(
    lws_controller: Cluster, tmp_path: Path, provider: str
) -> None:
    live_cluster = lws_controller
    namespace = f"lws-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    live_cluster.kubectl("label", "namespace", namespace, f"{NAMESPACE_LABEL}=true")
    md = model(provider, namespace)
    name = md["metadata"]["name"]
    render_and_apply({"md.yaml": md}, tmp_path, live_cluster)
    stop = threading.Event()
    api = live_cluster.api_client()
    controller(api, namespace, f"lws-live-{provider}", stop)
    try:

        def rolled_out() -> dict[str, Any] | None:
            live_cluster.alive(BINARY)
            live_cluster.alive("kube-scheduler")
            pods = get_json(live_cluster, "pods", "-n", namespace)["items"]
            status = get_json(live_cluster, f"modeldeployment.airunway.ai/{name}", "-n", namespace)
            phase = (status.get("status") or {}).get("phase")
            done = len(pods) == NODES * GROUPS and all(ready(p) for p in pods)
            # The EndpointSlice controller catches up with the Ready pods a moment later.
            reached = served_by(live_cluster, namespace, name)
            finished = done and phase == "Running" and len(reached) >= GROUPS
            return {"pods": pods, "model": status, "reached": reached} if finished else None

        seen = wait_until(
            rolled_out,
            timeout=ROLLOUT_TIMEOUT,
            what="the group's pods Ready, the model Running, the Service reaching them",
        )
        assert seen is not None
        sets = get_json(live_cluster, "statefulsets", "-n", namespace)["items"]
        lws = get_json(live_cluster, f"leaderworkerset/{name}", "-n", namespace)
        services = get_json(live_cluster, "services", "-n", namespace)["items"]
    finally:
        stop.set()
        api.close()
        live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")

    pods, status = seen["pods"], seen["model"]["status"]
    # The controller's own objects: the leader StatefulSet (one leader per group) and a worker
    # StatefulSet of P - 1 pods per group.
    assert sorted((s["metadata"]["name"], s["spec"]["replicas"]) for s in sets) == [
        (name, GROUPS),
        *((f"{name}-{g}", NODES - 1) for g in range(GROUPS)),
    ]
    # Every pod by group and index, each on a GPU node with the GPUs it asked for, and only the
    # leaders run vLLM.
    nodes = {
        n["metadata"]["name"]: int(n["status"]["capacity"].get(GPU, 0))
        for n in get_json(live_cluster, "nodes")["items"]
    }
    placed = sorted(
        (
            p["metadata"]["labels"][f"{LWS_LABELS}/group-index"],
            p["metadata"]["labels"][f"{LWS_LABELS}/worker-index"],
            p["spec"]["containers"][0]["name"],
            p["spec"]["containers"][0]["resources"]["limits"][GPU],
            nodes[p["spec"]["nodeName"]] >= GPUS,
            any(e["name"] == "LWS_LEADER_ADDRESS" for e in p["spec"]["containers"][0]["env"]),
        )
        for p in pods
    )
    assert placed == [
        (str(g), str(w), "vllm" if w == 0 else "ray-worker", str(GPUS), True, True)
        for g in range(GROUPS)
        for w in range(NODES)
    ]
    # The workers join the leader of their own group at the address the webhook gave them.
    leader_address = {
        p["metadata"]["labels"][f"{LWS_LABELS}/group-index"]: next(
            e["value"]
            for e in p["spec"]["containers"][0]["env"]
            if e["name"] == "LWS_LEADER_ADDRESS"
        )
        for p in pods
    }
    assert leader_address == {str(g): f"{name}-{g}.{name}-{g}.{namespace}" for g in range(GROUPS)}
    # Runway's Service reaches the leaders only; the controller made one headless Service per
    # group (UniquePerReplica), none named like Runway's.
    assert sorted(
        (s["metadata"]["name"], s["spec"].get("clusterIP") == "None") for s in services
    ) == sorted([(name, False), *((f"{name}-{g}", True) for g in range(GROUPS))])
    assert seen["reached"] == [f"{name}-{g}" for g in range(GROUPS)]
    assert (lws["status"]["readyReplicas"], lws["status"]["replicas"]) == (GROUPS, GROUPS)
    assert (status["phase"], status["replicas"]["desired"], status["replicas"]["ready"]) == (
        "Running",
        GROUPS,
        GROUPS,
    )
    assert status["endpoint"] == {"service": name, "port": 8000}
