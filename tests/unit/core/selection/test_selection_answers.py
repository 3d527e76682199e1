"""Provider selection as the registry remembers it (core.selection.choice.select_provider keeps
each answer per candidates and rule input) against the reference, the same selection on a copy
of the registry that remembers nothing: the same decision, warnings and count, over generated
specs whose fields the rules read differ in value, type (`1`, `1.0`, `True`, `"1"`) and key
order, for the shipped configs and for rules that read all of spec or fail."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.kinds import ModelDeployment
from core.selection.choice import MAX_REMEMBERED_INPUT, ProviderChoice, select_provider
from core.selection.configs import ProviderRegistry
from tests.support.builders import (
    engine_capability,
    provider_config,
    registry_of,
    shipped_registry,
)

SHIPPED = shipped_registry()
ODD_RULES = registry_of(
    provider_config(
        "dynamo",
        engines=[engine_capability("vllm", gpu=True, cpu=True)],
        rules=[
            ("spec.resources.gpu.count > 1", 90),  # fails when resources or gpu is missing
            ("size(spec) > 3", 80),  # reads all of spec
            ("spec.model.id == 'a'", 70),  # fails when model is missing
            ("spec.serving.mode == 'aggregated' && spec.engine.type == 'vllm'", 60),
        ],
    ),
    provider_config(
        "kaito",
        engines=[engine_capability("vllm", gpu=True, cpu=True)],
        rules=[("has(spec.resources) && spec.resources.gpu.count == 1.0", 75), ("true", 1)],
    ),
)
NUMBERS = st.sampled_from([1, 2, 8, 0, 1.0, 2.5, True, False, "1", None])
GPUS = st.fixed_dictionaries({}, optional={"count": NUMBERS, "type": st.sampled_from(["a", "b"])})
RESOURCES = st.fixed_dictionaries(
    {}, optional={"gpu": GPUS, "memory": st.sampled_from(["1Gi", ""]), "cpu": NUMBERS}
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "engine": {"type": draw(st.sampled_from(["vllm", "vllm", "sglang", "llamacpp", ""]))},
        "serving": {"mode": draw(st.sampled_from(["aggregated", "aggregated", "disaggregated"]))},
    }
    if draw(st.integers(0, 3)):
        resources = draw(RESOURCES)
        if draw(st.booleans()):  # the same fields in the other order
            resources = dict(reversed(list(resources.items())))
        spec["resources"] = resources
    if draw(st.booleans()):
        spec["model"] = {"id": draw(st.sampled_from(["a", "b"]))}
    keys = list(spec)
    return {k: spec[k] for k in draw(st.permutations(keys))}


def answers(spec: dict[str, Any], registry: ProviderRegistry) -> tuple[Any, ...]:
    md = ModelDeployment({"spec": spec})
    remembered = select_provider(spec, md, registry)
    fresh = select_provider(spec, md, dataclasses.replace(registry, answers={}))
    again = select_provider(spec, md, registry)
    return remembered, fresh, again


@settings(max_examples=600, deadline=None)
@given(spec=specs(), registry=st.sampled_from([SHIPPED, ODD_RULES]))
def test_a_remembered_selection_is_the_selection(
    spec: dict[str, Any], registry: ProviderRegistry
) -> None:
    remembered, fresh, again = answers(spec, registry)

    assert remembered == fresh
    assert again == fresh


@pytest.mark.parametrize(
    "count", [1, 1.0, True, "1", 2], ids=["int", "float", "bool", "string", "other"]
)
def test_values_of_other_types_are_not_taken_for_one_another(count: Any) -> None:
    registry = dataclasses.replace(ODD_RULES, answers={})
    for first in (1, 1.0, True, "1", 2):  # every other answer remembered first
        select_provider(
            spec := {"engine": {"type": "vllm"}, "resources": {"gpu": {"count": first}}},
            ModelDeployment({"spec": spec}),
            registry,
        )
    spec = {"engine": {"type": "vllm"}, "resources": {"gpu": {"count": count}}}

    remembered, fresh, _ = answers(spec, registry)

    assert remembered == fresh


def test_a_long_input_is_selected_every_time_and_not_kept() -> None:
    registry = dataclasses.replace(SHIPPED, answers={})
    spec = {
        "engine": {"type": "vllm", "args": {"x": "y" * MAX_REMEMBERED_INPUT}},
        "resources": {"gpu": {"count": 1}},
    }

    choice = select_provider(spec, ModelDeployment({"spec": spec}), registry)

    assert isinstance(choice, ProviderChoice)
    assert not any(key[0] == "provider" for key in registry.answers)
