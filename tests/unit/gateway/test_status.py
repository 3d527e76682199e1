"""ExternalModelProvider status from per-model outcomes."""

from __future__ import annotations

import pytest

from gateway.merge import Owner
from gateway.status import ModelResult, Phase, RegistrationOutcome, phase_of, provider_status

OWNER = Owner("ExternalModelProvider", "gw", "p")


def result(outcome: RegistrationOutcome, name: str = "m") -> ModelResult:
    return ModelResult(name, OWNER, f"runway:emp:gw:p:{name}", outcome, f"{name}: {outcome}")


@pytest.mark.parametrize(
    ("outcomes", "phase"),
    [
        ([RegistrationOutcome.REGISTERED, RegistrationOutcome.REGISTERED], Phase.READY),
        ([RegistrationOutcome.REGISTERED, RegistrationOutcome.NOT_CONFIRMED], Phase.PENDING),
        ([RegistrationOutcome.REGISTERED, RegistrationOutcome.SECRET_UNAVAILABLE], Phase.FAILED),
        ([RegistrationOutcome.REGISTRATION_FAILED, RegistrationOutcome.CONFLICT], Phase.CONFLICT),
        ([], Phase.PENDING),
    ],
    ids=["all-registered", "not-confirmed", "secret", "conflict-wins", "nothing-yet"],
)
def test_phase_of(outcomes: list[RegistrationOutcome], phase: Phase) -> None:
    assert phase_of([result(o, f"m{i}") for i, o in enumerate(outcomes)]) == phase


def test_nothing_produces_degraded() -> None:
    produced = {phase_of([result(o)]) for o in RegistrationOutcome}
    assert Phase.DEGRADED not in produced


def test_a_condition_keeps_its_transition_time_while_unchanged() -> None:
    first = provider_status(
        [result(RegistrationOutcome.REGISTERED)], generation=1, previous=None, now="T1"
    )
    same = provider_status(
        [result(RegistrationOutcome.REGISTERED)], generation=1, previous=first, now="T2"
    )
    flipped = provider_status(
        [result(RegistrationOutcome.CONFLICT)], generation=2, previous=same, now="T3"
    )

    assert same == first
    assert [c["lastTransitionTime"] for c in first["conditions"]] == ["T1", "T1"]
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in flipped["conditions"]] == [
        ("Ready", "False", "T3"),
        ("ServedNamesUnique", "False", "T3"),
    ]
    assert (flipped["phase"], flipped["observedGeneration"]) == ("Conflict", 2)
