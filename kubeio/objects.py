"""Kubernetes object conventions every edge shares: the namespace/name key and status conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.admission.verdict import DEFAULT_NAMESPACE
from core.model.plugin import UpstreamKind
from core.rendering.inferencegateway import GATEWAY_KINDS
from core.rendering.pods import DEPLOYMENTS
from core.status.conditions import condition as core_condition
from providers.modules import plugins


def upstream_kinds() -> tuple[UpstreamKind, ...]:
    """The upstream kinds a ModelDeployment's objects may have, as (group, version, plural,
    kind): apps/v1 Deployments, the kinds each provider declares (what its status hook reads)
    and the gateway's (core status gateway_state), each once. The status controller watches
    them; the portal's Deployments page shows them."""
    kinds = [DEPLOYMENTS, *(k for p in plugins() for k in p.watched.kinds), *GATEWAY_KINDS]
    return tuple(dict.fromkeys(kinds))


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
