"""An admission that reuses the validation of an earlier one (`admit(..., known=)`: what a render
does when it asks whether its output is settled, admitting the source again as an update of its
own output) is the admission made without it: the same verdict, object, errors, warnings,
hydration and validation checks, over generated ModelDeployments, stored objects from generated
ModelDeployments and every example; and an earlier admission of another object is not reused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.pipeline import Admission, admit
from tests.support.builders import model_deployments, shipped_registry
from tests.support.paths import example_model_deployments

REGISTRY = shipped_registry()


def whole(admission: Admission) -> tuple[Any, ...]:
    """Every field, the validation checks (left out of ==) included."""
    return (admission, admission.checks)


def holds(obj: dict[str, Any], old: dict[str, Any] | None, known: Admission) -> None:
    sent = copy.deepcopy(obj)
    reused = admit(obj, old=old, registry=REGISTRY, known=known)
    fresh = admit(obj, old=old, registry=REGISTRY)
    assert whole(reused) == whole(fresh)
    assert obj == sent


@settings(max_examples=300, deadline=None)
@given(obj=model_deployments(), stored=st.none() | model_deployments())
def test_admitting_again_as_an_update_of_the_output_reuses_exactly(
    obj: dict[str, Any], stored: dict[str, Any] | None
) -> None:
    old = admit(stored, registry=REGISTRY).obj if stored is not None else None
    first = admit(obj, old=old, registry=REGISTRY)
    holds(obj, first.obj, first)  # what renderer.output.render's _is_settled asks
    holds(obj, old, first)  # the same admission again
    holds(obj, None, first)  # as a create


@settings(max_examples=200, deadline=None)
@given(obj=model_deployments(), other=model_deployments())
def test_an_admission_of_another_object_is_not_reused(
    obj: dict[str, Any], other: dict[str, Any]
) -> None:
    known = admit(other, registry=REGISTRY)
    holds(obj, None, known)
    holds(obj, known.obj, known)


@pytest.mark.parametrize(("name", "obj"), example_model_deployments())
def test_every_example_admitted_again_reuses_exactly(name: str, obj: dict[str, Any]) -> None:
    first = admit(obj, registry=REGISTRY)
    holds(obj, first.obj, first)
