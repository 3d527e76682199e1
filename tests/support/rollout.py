"""What a rendered tree became on a live cluster (tests/support/live.py): the Deployments, the
pods each one owns, where they were scheduled, the EndpointSlices of each Service and the pods an
InferencePool's selector matches. Everything is read from the API server, never from the
rendered templates, so a test compares what Runway wrote with what the cluster made of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.cluster import Cluster
from tests.support.live import GPU
from tests.support.wait import wait_until

ROLLOUT_TIMEOUT = 120


@dataclass(frozen=True, slots=True)
class Placed:
    """One live pod: where it runs and what it asked for."""

    pod: str
    deployment: str
    node: str
    gpus_requested: int
    node_gpus: int
    ready: bool
    ip: str


def get(cluster: Cluster, *what: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)
    return found


def available(deployment: Mapping[str, Any]) -> bool:
    """Rolled out as `kubectl rollout status` means it, and Available."""
    status, spec = deployment.get("status", {}), deployment["spec"]
    conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
    return (
        status.get("observedGeneration") == deployment["metadata"]["generation"]
        and status.get("updatedReplicas", 0) == spec.get("replicas", 1)
        and status.get("readyReplicas", 0) == spec.get("replicas", 1)
        and status.get("availableReplicas", 0) == spec.get("replicas", 1)
        and conditions.get("Available") == "True"
    )


def wait_rolled_out(cluster: Cluster, namespace: str, names: list[str]) -> None:
    def done() -> bool:
        cluster.alive("kube-controller-manager")
        items = get(cluster, "deployments", "-n", namespace)["items"]
        ready = {d["metadata"]["name"] for d in items if available(d)}
        return set(names) <= ready

    wait_until(done, timeout=ROLLOUT_TIMEOUT, interval=0.5, what=f"{names} Available")


def _gpus(pod: Mapping[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("requests", {}).get(GPU, 0))
        for c in pod["spec"]["containers"]
    )


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return pod.get("status", {}).get("phase") == "Running" and conditions.get("Ready") == "True"


def placements(cluster: Cluster, namespace: str) -> list[Placed]:
    """Every live pod of a Deployment in the namespace (through its ReplicaSet), sorted."""
    owners = {
        rs["metadata"]["name"]: rs["metadata"]["ownerReferences"][0]["name"]
        for rs in get(cluster, "replicasets", "-n", namespace)["items"]
        if rs["metadata"].get("ownerReferences")
    }
    nodes = {
        n["metadata"]["name"]: int(n["status"]["capacity"].get(GPU, 0))
        for n in get(cluster, "nodes")["items"]
    }
    placed = []
    for pod in get(cluster, "pods", "-n", namespace)["items"]:
        refs = pod["metadata"].get("ownerReferences") or [{"kind": "", "name": ""}]
        if refs[0]["kind"] != "ReplicaSet" or pod["metadata"].get("deletionTimestamp"):
            continue
        node = pod["spec"].get("nodeName", "")
        placed.append(
            Placed(
                pod["metadata"]["name"],
                owners[refs[0]["name"]],
                node,
                _gpus(pod),
                nodes.get(node, 0),
                _ready(pod),
                pod.get("status", {}).get("podIP", ""),
            )
        )
    return sorted(placed, key=lambda p: p.pod)


def endpoint_pods(cluster: Cluster, namespace: str, service: str) -> dict[str, bool]:
    """The pods a Service's EndpointSlices list, with each endpoint's `ready` condition."""
    slices = get(
        cluster,
        "endpointslices.discovery.k8s.io",
        "-n",
        namespace,
        "-l",
        f"kubernetes.io/service-name={service}",
    )["items"]
    return {
        e["targetRef"]["name"]: bool(e.get("conditions", {}).get("ready"))
        for s in slices
        for e in s.get("endpoints") or []
    }


def selected_pods(cluster: Cluster, namespace: str, selector: Mapping[str, Any]) -> list[str]:
    """The live pods a label selector (matchLabels only, as an InferencePool has) matches."""
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector["matchLabels"].items()))
    pods = get(cluster, "pods", "-n", namespace, "-l", labels)["items"]
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))


def serving_pods(cluster: Cluster, namespace: str, ports: list[int]) -> list[str]:
    """The live pods whose containers, or native sidecars (initContainers that keep running:
    restartPolicy Always, such as llm-d's routing sidecar), listen on one of `ports` (what an
    InferencePool routes to)."""
    pods = get(cluster, "pods", "-n", namespace)["items"]
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(
            port["containerPort"] in ports
            for c in [
                *p["spec"]["containers"],
                *(
                    i
                    for i in p["spec"].get("initContainers", [])
                    if i.get("restartPolicy") == "Always"
                ),
            ]
            for port in c.get("ports", [])
        )
    )


def claims_of_pods(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Every PersistentVolumeClaim a live pod mounts: {claim: its phase, or "missing"}."""
    pods = get(cluster, "pods", "-n", namespace)["items"]
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for p in pods
        for v in p["spec"].get("volumes", [])
        if "persistentVolumeClaim" in v
    }
    live = {
        c["metadata"]["name"]: c.get("status", {}).get("phase", "")
        for c in get(cluster, "persistentvolumeclaims", "-n", namespace)["items"]
    }
    return {name: live.get(name, "missing") for name in sorted(claims)}
