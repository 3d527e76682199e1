"""Dynamo: the DynamoGraphDeployment's own status at the pin (status.state: initializing,
pending, successful, failed; status.services.<name>: replicas, readyReplicas, availableReplicas).
The operator serves a standalone Frontend as the Service <name>-frontend on 8000; behind a
gateway the pool's picker reaches the workers, and no Frontend Service exists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ServiceEndpoint, UpstreamKind, Watched, Workload
from core.status.workloads import (
    DEPLOYING,
    FAILED,
    PENDING,
    RUNNING,
    condition,
    count,
    mapping_at,
    not_created,
    text,
)
from providers.dynamo.render import behind_gateway

FRONTEND_PORT = 8000
_STATES = {
    "successful": (RUNNING, "DeploymentReady"),
    "initializing": (DEPLOYING, "Initializing"),
    "pending": (PENDING, "Pending"),
    "failed": (FAILED, "DeploymentFailed"),
}


def operator_service(md: ModelDeployment) -> ServiceEndpoint | None:
    """The Service Dynamo <DYNAMO_VERSION>'s operator creates for the graph's standalone
    Frontend: `<graph>-<component, lower-cased>` (deploy/operator/internal/dynamo/graph.go
    GetDynamoComponentName), so `<name>-frontend`, on the frontend's HTTP port 8000
    (internal/consts DynamoServicePort, the container port component_frontend.go sets). Behind
    a gateway the graph has no Frontend (the workers' sidecars serve the picker), so none."""
    return None if behind_gateway(md) else ServiceEndpoint(f"{md.name}-frontend", FRONTEND_PORT)


def workload_status(md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]) -> Workload:
    ref = f"DynamoGraphDeployment/{md.name}"
    graph = observed.get(ref)
    if graph is None:
        return not_created(ref)
    rows = [s for s in mapping_at(graph, "status", "services").values() if isinstance(s, Mapping)]
    desired = sum(count(s.get("replicas")) for s in rows)
    ready = sum(count(s.get("readyReplicas")) for s in rows)
    available = sum(count(s.get("availableReplicas")) for s in rows)
    state = text(dig(graph, "status", "state"))
    phase, reason = _STATES.get(state, (PENDING, "Unknown"))
    generation = dig(graph, "metadata", "generation")
    seen = dig(graph, "status", "observedGeneration")
    if (
        phase == RUNNING
        and isinstance(generation, int)
        and isinstance(seen, int)
        and seen < generation
    ):
        phase, reason = DEPLOYING, "RolloutPending"
    found = condition(graph, "Ready")
    detail = text(found.get("message")) if found is not None else ""
    message = detail or f"{ref} is {state or 'without a state yet'}"
    frontend = operator_service(md)
    service, port = (frontend.name, frontend.port) if frontend else ("", 0)
    return Workload(phase, reason, message, desired, ready, available, service, port)


WATCHED = Watched(
    (UpstreamKind("nvidia.com", "v1alpha1", "dynamographdeployments", "DynamoGraphDeployment"),),
    workload_status,
)
