"""Live mode: how a composed ModelDeployment's GPU request fits the nodes' allocatable GPUs.
Nodes are cluster facts, read with the portal's own client (ui.context.cluster().own()); a
node could hold one replica when its allocatable count of the GPU resource is at least the
replica's request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from core.model.kinds import dig
from kubeio.client import api_failure
from ui.cluster import TIMEOUT, Cluster

DEFAULT_GPU = "nvidia.com/gpu"
MAX_NODES = 500  # nodes listed (one page); a larger cluster is said to be cut


@dataclass(frozen=True, slots=True)
class NodeFit:
    name: str
    allocatable: int
    fits: bool


@dataclass(frozen=True, slots=True)
class Fit:
    resource: str
    per_replica: int
    replicas: int
    nodes: tuple[NodeFit, ...] = ()
    problem: str = ""
    more: bool = False  # the cluster has more nodes than were listed

    @property
    def holding(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.fits)


def request_of(obj: Mapping[str, Any]) -> tuple[str, int, int]:
    """The GPU resource, GPUs per replica and replicas a (hydrated) object asks for."""
    kind = dig(obj, "spec", "resources", "gpu", "type")
    count = dig(obj, "spec", "resources", "gpu", "count")
    replicas = dig(obj, "spec", "scaling", "replicas")
    return (
        kind if isinstance(kind, str) and kind else DEFAULT_GPU,
        count if isinstance(count, int) and not isinstance(count, bool) else 0,
        replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1,
    )


def gpu_fit(obj: Mapping[str, Any], cluster: Cluster) -> Fit:
    resource, per_replica, replicas = request_of(obj)
    try:
        api = kubernetes.client.CoreV1Api(cluster.own())
        listed = api.list_node(limit=MAX_NODES, _request_timeout=TIMEOUT)
    except Exception as err:
        failure = api_failure(err)
        if failure is None:
            raise
        return Fit(resource, per_replica, replicas, problem=failure)
    nodes = []
    for node in listed.items:
        allocatable = (node.status.allocatable or {}) if node.status is not None else {}
        have = _count(allocatable.get(resource))
        name = node.metadata.name if node.metadata is not None else ""
        nodes.append(NodeFit(str(name), have, have >= per_replica))
    more = bool(listed.metadata is not None and listed.metadata._continue)
    return Fit(
        resource, per_replica, replicas, tuple(sorted(nodes, key=lambda n: n.name)), more=more
    )


def _count(value: Any) -> int:
    text = str(value) if value is not None else "0"
    return int(text) if text.isascii() and text.isdigit() else 0
