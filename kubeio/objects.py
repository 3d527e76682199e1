"""Kubernetes object conventions every edge shares: the namespace/name key and status conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_NAMESPACE = "default"


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
    """One status condition. It keeps the lastTransitionTime of `previous` (the object's status
    before) while its status stays the same, as Kubernetes' own meta.SetStatusCondition does."""
    status = "True" if ok else "False"
    since = now
    for old in (previous or {}).get("conditions") or ():
        if isinstance(old, Mapping) and old.get("type") == kind and old.get("status") == status:
            since = str(old.get("lastTransitionTime") or now)
    out: dict[str, Any] = {
        "type": kind,
        "status": status,
        "reason": str(reason),
        "message": message,
        "lastTransitionTime": since,
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out
