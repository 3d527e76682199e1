"""A live control plane on a test cluster: kube-controller-manager, kube-scheduler and KWOK.

`start_live_cluster()` starts a test cluster of its own (tests/support/cluster.py, with the
ExtendedResourceToleration admission plugin, as GPU clusters run it), then the controller-manager
and the scheduler of the same Kubernetes pin and the KWOK controller, all on loopback with the
admin kubeconfig, leader election off. It registers the fake nodes of NODES: GPU nodes with
`nvidia.com/gpu` capacity, the labels GPU nodes carry and the `nvidia.com/gpu` NoSchedule taint,
and one CPU-only node. Deployments then roll out: ReplicaSets and pods are created, scheduled
onto the fake nodes, and KWOK turns each scheduled pod Running and Ready (it runs no container
and no probe); Services get EndpointSlices; namespaces get their `default` ServiceAccount.

What KWOK does not simulate: images, containers, probes, volumes being mounted, GPU devices, the
network. A Ready pod here means "scheduled, with every object it needs", not "serves".
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.main import main
from kubeio.yamlio import dump, dump_all
from tests.cluster.kwok import stages_file
from tests.support.cluster import (
    Cluster,
    binaries_dir,
    free_port,
    spawn,
    start_cluster,
)
from tests.support.wait import wait_until

GPU = "nvidia.com/gpu"
NOT_READY = "node.kubernetes.io/not-ready"
BINARIES = ("kube-controller-manager", "kube-scheduler", "kwok")
START_TIMEOUT = 90
# KWOK manages only the nodes that carry this annotation (kwok's own convention).
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# Every default controller but node IPAM (KWOK hands out the pod IPs). The node lifecycle
# controller runs: it lifts the not-ready taint the API server puts on a new node once the node
# is Ready, and KWOK keeps each node's Lease fresh.
CONTROLLERS = "*,-node-ipam-controller"


@dataclass(frozen=True, slots=True)
class FakeNode:
    name: str
    gpus: int
    instance_type: str
    product: str | None = None


NODES = (
    FakeNode("gpu-a", 8, "p5.48xlarge", "NVIDIA-H100-80GB-HBM3"),
    FakeNode("gpu-b", 8, "p5.48xlarge", "NVIDIA-H100-80GB-HBM3"),
    FakeNode("gpu-c", 8, "p5.48xlarge", "NVIDIA-H100-80GB-HBM3"),
    FakeNode("gpu-d", 8, "p5.48xlarge", "NVIDIA-H100-80GB-HBM3"),
    FakeNode("cpu-a", 0, "m7i.4xlarge"),
)


def missing_binaries() -> list[str]:
    found = [n for n in BINARIES if not (binaries_dir() / n).exists()]
    return found + ([] if stages_file(binaries_dir().parent).exists() else ["kwok stages"])


def node_manifest(node: FakeNode) -> dict[str, Any]:
    """A Node as a GPU (or CPU) node registers itself: labels, taint, capacity."""
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": node.instance_type,
        "type": "kwok",
    }
    # What the instance types have: p5.48xlarge 192 vCPU and 2 TiB, m7i.4xlarge 16 vCPU, 64 GiB.
    cpu, memory = ("192", "2048Gi") if node.gpus else ("16", "64Gi")
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "1Ti"}
    spec: dict[str, Any] = {}
    if node.gpus:
        labels |= {f"{GPU}.present": "true", f"{GPU}.count": str(node.gpus)}
        if node.product:
            labels[f"{GPU}.product"] = node.product
        capacity[GPU] = str(node.gpus)
        spec["taints"] = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels, "annotations": dict(KWOK_ANNOTATION)},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": copy.deepcopy(capacity)},
    }


def _components(cluster: Cluster) -> dict[str, list[str]]:
    kubeconfig, pki, bins = str(cluster.kubeconfig), cluster.pki, binaries_dir()
    # No HTTPS endpoint (--secure-port=0): the tests read the API server, not the components.
    common = [f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0"]
    return {
        "kube-controller-manager": [
            str(bins / "kube-controller-manager"),
            *common,
            f"--controllers={CONTROLLERS}",
            f"--service-account-private-key-file={pki / 'sa-key.pem'}",
            f"--root-ca-file={pki / 'ca.pem'}",
            "--use-service-account-credentials=false",
            "--v=1",
        ],
        "kube-scheduler": [
            str(bins / "kube-scheduler"),
            *common,
            "--v=1",
        ],
        "kwok": [
            str(bins / "kwok"),
            f"--kubeconfig={kubeconfig}",
            f"--config={stages_file(bins.parent)}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.244.0.0/16",
            "--node-ip=127.0.0.1",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{free_port()}",
        ],
    }


def _nodes_ready(cluster: Cluster) -> bool:
    """Every node Ready and without the not-ready taint the API server gave it at creation."""
    for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
        cluster.alive(name)
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    ready = [
        any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
        and not any(t["key"] == NOT_READY for t in n["spec"].get("taints", []))
        for n in nodes
        if "conditions" in n.get("status", {})
    ]
    return ready == [True] * len(NODES)


def _default_service_account(cluster: Cluster) -> bool:
    cluster.alive("kube-controller-manager")
    return cluster.kubectl("get", "serviceaccount", "default", check=False).returncode == 0


def start_live_cluster(workdir: Path, *, crds: bool = True) -> Cluster:
    """A test cluster with a live control plane and the fake nodes of NODES, all Ready (without
    any CRD when crds=False)."""
    cluster = start_cluster(workdir, admission=("ExtendedResourceToleration",), crds=crds)
    try:
        for name, argv in _components(cluster).items():
            spawn(cluster, name, argv)
        cluster.apply_manifests(dump_all(node_manifest(n) for n in NODES))
        wait_until(lambda: _nodes_ready(cluster), timeout=START_TIMEOUT, what="KWOK nodes Ready")
        wait_until(
            lambda: _default_service_account(cluster),
            timeout=START_TIMEOUT,
            what="the default ServiceAccount",
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def persistent_volume(name: str, size: str) -> dict[str, Any]:
    """A PersistentVolume the cluster administrator provides (static provisioning: no
    provisioner runs here); the controller-manager binds a claim to it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": f"/var/lib/runway-test/{name}"},
        },
    }


def user_claim(name: str, namespace: str) -> dict[str, Any]:
    """A claim the user created before the ModelDeployment (a model cache it names)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "20Gi"}},
            "storageClassName": "",
        },
    }


def render_and_apply(
    sources: Mapping[str, Mapping[str, Any]], work: Path, cluster: Cluster
) -> Path:
    """Runway's own two commands: `runway render` of `sources` (file name -> object) into a
    repository under `work`, then `runway apply` of the rendered tree to `cluster`; the tree."""
    folder = work / "sources"
    folder.mkdir(exist_ok=True)
    for name, obj in sources.items():
        (folder / name).write_text(dump(obj))
    assert main(["render", str(folder), "--repo", str(work / "repo")]) == 0
    rendered = work / "repo" / "rendered"
    assert main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)]) == 0
    return rendered
