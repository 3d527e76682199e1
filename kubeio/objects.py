"""Kubernetes object conventions every edge shares: the namespace/name key and status conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.status.conditions import condition as core_condition

DEFAULT_NAMESPACE = "default"
# The upstream kinds a ModelDeployment's objects may have, as (group, version, plural, kind): what
# the providers' status mappings read (providers/<name>/status.py) and the gateway objects (core
# status gateway_state). The status controller watches them; the portal's Deployments page shows
# them.
UPSTREAM_KINDS = (
    ("apps", "v1", "deployments", "Deployment"),
    ("nvidia.com", "v1alpha1", "dynamographdeployments", "DynamoGraphDeployment"),
    ("kaito.sh", "v1beta1", "workspaces", "Workspace"),
    ("ray.io", "v1", "rayservices", "RayService"),
    ("inference.networking.k8s.io", "v1", "inferencepools", "InferencePool"),
    ("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute"),
)


def object_key(namespace: str | None, name: str) -> str:
    """`namespace/name`, with the namespace the API server would give an object without one."""
    return f"{namespace or DEFAULT_NAMESPACE}/{name}"


def condition(
    kind: str,
    ok: bool,
    reason: str,
    message: str,
    now: str,
    *,
    generation: int | None = None,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One status condition (core/status/conditions.py): it keeps the lastTransitionTime of
    `previous` (the object's status before) while its status stays the same."""
    return core_condition(
        kind, ok, str(reason), message, now=now, generation=generation, previous=previous
    )
