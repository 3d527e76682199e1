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

from gateway.logs import summary
from gateway.merge import Owner
from kubeio.objects import condition

MAX_MODELS = 256  # entries of status.models; the message counts the rest
MAX_CLAIMANTS = 8  # owners in one entry's claimants


class Phase(StrEnum):
    PENDING = "Pending"
    READY = "Ready"
    CONFLICT = "Conflict"
    FAILED = "Failed"
    DEGRADED = "Degraded"  # reserved (seed 004): nothing produces it yet


class RegistrationOutcome(StrEnum):
    """Why a model is or is not registered in LiteLLM (its `reason` in the status)."""

    REGISTERED = "Registered"
    CONFLICT = "Conflict"
    SECRET_UNAVAILABLE = "SecretUnavailable"
    REGISTRATION_FAILED = "RegistrationFailed"
    NOT_CONFIRMED = "NotConfirmed"
    INVALID = "Invalid"


FAILURES = (
    RegistrationOutcome.SECRET_UNAVAILABLE,
    RegistrationOutcome.REGISTRATION_FAILED,
    RegistrationOutcome.INVALID,
)


@dataclass(frozen=True, slots=True)
class ModelResult:
    served_name: str
    owner: Owner
    id: str
    outcome: RegistrationOutcome
    message: str = ""
    claimants: tuple[Owner, ...] = ()
    requested_by: str | None = None

    @property
    def registered(self) -> bool:
        return self.outcome == RegistrationOutcome.REGISTERED


def phase_of(results: Sequence[ModelResult]) -> Phase:
    outcomes = {r.outcome for r in results}
    if RegistrationOutcome.CONFLICT in outcomes:
        return Phase.CONFLICT
    if outcomes & set(FAILURES):
        return Phase.FAILED
    if results and outcomes == {RegistrationOutcome.REGISTERED}:
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
    message = summary([r.message for r in problems]) or (
        f"{len(results)} model(s) registered and confirmed in LiteLLM"
    )
    conflicts = [r for r in results if r.outcome == RegistrationOutcome.CONFLICT]
    conditions = [
        condition(
            "Ready",
            phase == Phase.READY,
            RegistrationOutcome.REGISTERED
            if phase == Phase.READY
            else (problems[0].outcome if problems else RegistrationOutcome.NOT_CONFIRMED),
            message,
            now,
            generation=generation,
            previous=previous,
        ),
        condition(
            "ServedNamesUnique",
            not conflicts,
            "Unique" if not conflicts else "Conflict",
            summary([r.message for r in conflicts]) or "no servedName is claimed elsewhere",
            now,
            generation=generation,
            previous=previous,
        ),
    ]
    status: dict[str, Any] = {
        "phase": str(phase),
        "message": message,
        "conditions": conditions,
        "models": [_model(r) for r in results[:MAX_MODELS]],
    }
    if len(results) > MAX_MODELS:
        status["message"] = summary([f"{len(results) - MAX_MODELS} models not listed", message])
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
        out["claimants"] = [str(c) for c in result.claimants[:MAX_CLAIMANTS]]
    return out


def invalid_status(
    reason: str, *, generation: int | None, previous: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    """The status of a provider the sync skipped as invalid (admission would have refused it)."""
    message = summary([f"not registered: {reason}"])
    status: dict[str, Any] = {
        "phase": str(Phase.FAILED),
        "message": message,
        "conditions": [
            condition(
                "Ready",
                False,
                RegistrationOutcome.INVALID,
                message,
                now,
                generation=generation,
                previous=previous,
            )
        ],
        "models": [],
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status
