"""Kubernetes object conventions every edge shares: the namespace/name key and status conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import DEFAULT_NAMESPACE
from core.status.conditions import condition as core_condition


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
