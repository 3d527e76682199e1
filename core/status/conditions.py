"""Status conditions (metav1.Condition) as every status writer of Runway writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def condition(
    kind: str,
    status: bool,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int | None,
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One metav1.Condition. It keeps the lastTransitionTime of the same condition in
    `previous` (the status before) while its status stays the same, as meta.SetStatusCondition
    does."""
    value = "True" if status else "False"
    since = now
    for old in (previous or {}).get("conditions") or ():
        if isinstance(old, Mapping) and old.get("type") == kind and old.get("status") == value:
            since = str(old.get("lastTransitionTime") or now)
    out: dict[str, Any] = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out
