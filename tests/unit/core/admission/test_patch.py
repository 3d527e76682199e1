"""The admission patch generator (core.admission.patch) against the reference, jsonpatch's
make_patch: applied to the input, its patch gives exactly the object make_patch's patch gives
(compared as JSON text with sorted keys, so `1`, `1.0` and `true` are three different values),
over generated pairs of objects, the hydrations of generated ModelDeployments, and every
example. The webhook's patch is the diff of the input and `hydrate_shared`'s object, which
shares every value hydration did not change with the input: it is held to make_patch too, and
to the very operations the diff of a deep-copied hydration gives."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.entry import admit_object
from core.admission.hydrate import hydrate, hydrate_shared
from core.admission.pipeline import admit, json_patch
from tests.support.builders import model_deployments, shipped_registry
from tests.support.paths import example_model_deployments

REGISTRY = shipped_registry()
# Keys a JSON Pointer must escape, and ones it must not confuse.
KEYS = st.sampled_from(["a", "b", "~", "/", "~1", "a/b", "~0~1", "", "0", "-", "é", "spec"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 2.5])
    | st.text(max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5)


def text(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def holds(before: dict[str, Any], after: dict[str, Any]) -> None:
    ours = json_patch(before, after)
    reference = jsonpatch.make_patch(before, after).patch

    assert text(jsonpatch.apply_patch(copy.deepcopy(before), ours)) == text(
        jsonpatch.apply_patch(copy.deepcopy(before), reference)
    )
    assert text(jsonpatch.apply_patch(copy.deepcopy(before), ours)) == text(after)
    assert (ours == []) is (reference == [])


@st.composite
def edited(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """An object and a version of it with keys added, replaced and removed at any depth: what
    hydration does, and more."""
    before = draw(OBJECTS)
    after = copy.deepcopy(before)
    for _ in range(draw(st.integers(0, 6))):
        node: Any = after
        while isinstance(node, dict) and node and draw(st.booleans()):
            child = node[draw(st.sampled_from(sorted(node)))]
            if not isinstance(child, dict):
                break
            node = child
        if not isinstance(node, dict):
            continue
        action = draw(st.sampled_from(["add", "replace", "remove"]))
        if action == "remove" and node:
            del node[draw(st.sampled_from(sorted(node)))]
        else:
            node[draw(KEYS)] = draw(VALUES)
    return before, after


@settings(max_examples=400, deadline=None)
@given(pair=edited())
def test_an_edited_object_patches_as_make_patch_does(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    holds(*pair)


@settings(max_examples=300, deadline=None)
@given(before=OBJECTS, after=OBJECTS)
def test_any_two_objects_patch_as_make_patch_does(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    holds(before, after)


@settings(max_examples=400, deadline=None)
@given(obj=model_deployments())
def test_every_hydration_patches_as_make_patch_does(obj: dict[str, Any]) -> None:
    verdict = admit_object(obj, registry=REGISTRY)
    assert verdict.hydration is not None
    if verdict.hydration.structural or verdict.hydration.errors:
        assert verdict.patch() == []
        return
    holds(obj, dict(verdict.object))
    applied = jsonpatch.apply_patch(copy.deepcopy(obj), verdict.patch())
    assert text(applied) == text(verdict.object)
    # a hydrated object admitted again gets no patch
    assert admit_object(verdict.object, registry=REGISTRY).patch() == []


@pytest.mark.parametrize(("name", "obj"), example_model_deployments())
def test_every_example_patches_as_make_patch_does(name: str, obj: dict[str, Any]) -> None:
    admission = admit(obj, registry=REGISTRY)
    holds(obj, admission.obj)


def ordered(obj: Any) -> str:
    """JSON text in the object's own key order (the order a patch's values are written in)."""
    return json.dumps(obj)


def holds_shared(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    sent = ordered(obj)
    shared = hydrate_shared(obj, old=old, registry=REGISTRY)
    copied = hydrate(obj, old=old, registry=REGISTRY)

    assert ordered(shared.obj) == ordered(copied.obj)
    assert (shared.engine, shared.provider, shared.errors, shared.warnings) == (
        copied.engine,
        copied.provider,
        copied.errors,
        copied.warnings,
    )
    assert json_patch(obj, shared.obj) == json_patch(obj, copied.obj)
    holds(obj, shared.obj)
    assert ordered(obj) == sent  # the input is never changed


@settings(max_examples=400, deadline=None)
@given(obj=model_deployments())
def test_the_webhooks_shared_hydration_patches_as_a_copied_one(obj: dict[str, Any]) -> None:
    holds_shared(obj, None)


@settings(max_examples=300, deadline=None)
@given(obj=model_deployments(), stored=model_deployments())
def test_the_webhooks_shared_hydration_of_an_update_patches_as_a_copied_one(
    obj: dict[str, Any], stored: dict[str, Any]
) -> None:
    stored_as = hydrate(stored, registry=REGISTRY)
    old = stored_as.obj  # sticky selections come from it
    holds_shared(obj, old)
    holds_shared(copy.deepcopy(old), old)
    if not stored_as.errors:  # re-admitted as it is stored: no patch
        assert json_patch(old, hydrate_shared(old, old=old, registry=REGISTRY).obj) == []


@pytest.mark.parametrize(("name", "obj"), example_model_deployments())
def test_every_example_shared_hydration_patches_as_a_copied_one(
    name: str, obj: dict[str, Any]
) -> None:
    holds_shared(obj, None)
