"""Status conditions (metav1.Condition) as every status writer of Runway writes them.

Reasons and messages can come from upstream objects' status (a Workspace condition's reason, a
Deployment's progress message), which anyone who can write that status controls. A condition is
therefore always one the API server accepts (a reason matching metav1.Condition's pattern) and
small: messages are cut at MESSAGE_LIMIT characters, so one upstream object cannot grow a
ModelDeployment's status without bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MESSAGE_LIMIT = 1024  # characters of a status or condition message (metav1 allows 32768)
REASON_LIMIT = 128  # characters of a condition reason (metav1 allows 1024)
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_NOT_REASON = re.compile(r"[^A-Za-z0-9_,:]")


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` cut to at most `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def valid_reason(reason: str) -> str:
    """`reason` as metav1.Condition accepts it (CamelCase-like, at most REASON_LIMIT): characters
    it forbids are dropped, and a reason left empty or not starting with a letter is Unknown."""
    if len(reason) <= REASON_LIMIT and _REASON.fullmatch(reason):
        return reason
    cleaned = _NOT_REASON.sub("", reason)[:REASON_LIMIT].rstrip(",:")
    return cleaned if _REASON.fullmatch(cleaned) else "Unknown"


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
        "reason": valid_reason(reason),
        "message": bounded(message),
        "lastTransitionTime": since,
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out
