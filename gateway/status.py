"""ExternalModelProvider status from the sync's per-model outcomes (pure).

phase: Ready (every model registered and confirmed in LiteLLM's /model/info), Conflict (a
servedName is also claimed elsewhere, so it is not registered), Failed (the object is invalid,
its Secret cannot be read, or LiteLLM refused the write), Pending (written but not yet
confirmed). Degraded is reserved for a reachability probe and never produced here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gateway.merge import Owner


class Phase(StrEnum):
    PENDING = "Pending"
    READY = "Ready"
    CONFLICT = "Conflict"
    FAILED = "Failed"
    DEGRADED = "Degraded"  # reserved (seed 004): nothing produces it yet


class Outcome(StrEnum):
    """Why a model is or is not registered."""

    REGISTERED = "Registered"
    CONFLICT = "Conflict"
    SECRET_UNAVAILABLE = "SecretUnavailable"
    REGISTRATION_FAILED = "RegistrationFailed"
    NOT_CONFIRMED = "NotConfirmed"
    INVALID = "Invalid"


FAILURES = (Outcome.SECRET_UNAVAILABLE, Outcome.REGISTRATION_FAILED, Outcome.INVALID)


@dataclass(frozen=True, slots=True)
class ModelResult:
    served_name: str
    owner: Owner
    id: str
    outcome: Outcome
    message: str = ""
    claimants: tuple[Owner, ...] = ()
    requested_by: str | None = None

    @property
    def registered(self) -> bool:
        return self.outcome == Outcome.REGISTERED


def phase_of(results: Sequence[ModelResult]) -> Phase:
    outcomes = {r.outcome for r in results}
    if Outcome.CONFLICT in outcomes:
        return Phase.CONFLICT
    if outcomes & set(FAILURES):
        return Phase.FAILED
    if results and outcomes == {Outcome.REGISTERED}:
        return Phase.READY
    return Phase.PENDING


def provider_status(
    results: Sequence[ModelResult],
    *,
    generation: int | None,
    previous: Mapping[str, Any] | None,
    now: str,
) -> dict[str, Any]:
    """The whole status of one ExternalModelProvider. A condition keeps its lastTransitionTime
    while its status is unchanged, so an unchanged outcome writes an identical status."""
    phase = phase_of(results)
    problems = [r for r in results if not r.registered]
    message = "; ".join(r.message for r in problems) or (
        f"{len(results)} model(s) registered and confirmed in LiteLLM"
    )
    conflicts = [r for r in results if r.outcome == Outcome.CONFLICT]
    conditions = [
        _condition(
            "Ready",
            phase == Phase.READY,
            Outcome.REGISTERED if phase == Phase.READY else problems[0].outcome,
            message,
            generation,
            previous,
            now,
        ),
        _condition(
            "ServedNamesUnique",
            not conflicts,
            "Unique" if not conflicts else "Conflict",
            "; ".join(r.message for r in conflicts) or "no servedName is claimed elsewhere",
            generation,
            previous,
            now,
        ),
    ]
    status: dict[str, Any] = {
        "phase": str(phase),
        "message": message,
        "conditions": conditions,
        "models": [_model(r) for r in results],
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def _model(result: ModelResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "servedName": result.served_name,
        "id": result.id,
        "registered": result.registered,
        "reason": str(result.outcome),
    }
    if result.claimants:
        out["claimants"] = [str(c) for c in result.claimants]
    return out


def _condition(  # noqa: PLR0917  (a private helper; each call names the condition first)
    kind: str,
    ok: bool,
    reason: str,
    message: str,
    generation: int | None,
    previous: Mapping[str, Any] | None,
    now: str,
) -> dict[str, Any]:
    status = "True" if ok else "False"
    since = now
    for old in (previous or {}).get("conditions") or ():
        if isinstance(old, Mapping) and old.get("type") == kind and old.get("status") == status:
            since = str(old.get("lastTransitionTime") or now)
    condition: dict[str, Any] = {
        "type": kind,
        "status": status,
        "reason": str(reason),
        "message": message,
        "lastTransitionTime": since,
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition


def invalid_status(
    reason: str, *, generation: int | None, previous: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    """The status of a provider the sync skipped as invalid (admission would have refused it)."""
    message = f"not registered: {reason}"
    status: dict[str, Any] = {
        "phase": str(Phase.FAILED),
        "message": message,
        "conditions": [
            _condition("Ready", False, Outcome.INVALID, message, generation, previous, now)
        ],
        "models": [],
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status
