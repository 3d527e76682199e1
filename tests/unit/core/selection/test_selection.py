"""Engine and provider selection against the shipped configs and hand-made registries."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.hydrate import hydrate
from core.fields.errors import FieldError, Reason
from core.model.kinds import Choice, ModelDeployment
from core.selection.choice import CandidateTrace, rank_providers
from core.selection.configs import ProviderRegistry
from tests.support.builders import (
    disaggregated,
    engine_capability,
    model_deployment,
    provider_config,
    registry_of,
)

GPU_RULE_DYNAMO = (
    "has(spec.resources) && has(spec.resources.gpu) && spec.resources.gpu.count > 0 "
    "&& spec.engine.type == 'vllm'"
)


def selected(obj: dict[str, Any], registry: ProviderRegistry) -> tuple[str | None, str | None]:
    result = hydrate(obj, registry=registry)
    assert result.errors == ()
    return (
        result.engine.value if result.engine else None,
        result.provider.value if result.provider else None,
    )


def trace(obj: dict[str, Any], registry: ProviderRegistry) -> tuple[CandidateTrace, ...]:
    """The full trace `explain` prints: every rule of every candidate evaluated."""
    spec = hydrate(obj, registry=registry).obj["spec"]
    spec = {k: v for k, v in spec.items() if k != "provider"}  # as selection saw it
    return rank_providers(spec, ModelDeployment({"spec": spec}), registry)


@pytest.mark.parametrize(
    ("obj", "engine", "provider"),
    [
        (model_deployment(), "llamacpp", "kaito"),
        (model_deployment(gpu=0), "llamacpp", "kaito"),
        (model_deployment(resources={"cpu": "4"}), "llamacpp", "kaito"),
        (model_deployment(gpu=1), "vllm", "dynamo"),
        (model_deployment(gpu=1, engine="vllm"), "vllm", "dynamo"),
        (model_deployment(engine="vllm"), "vllm", "dynamo"),  # engine set: one GPU by default
        (model_deployment(gpu=2), "vllm", "kuberay"),
        (model_deployment(gpu=8, engine="vllm"), "vllm", "kuberay"),
        (disaggregated(), "vllm", "dynamo"),
        (model_deployment(engine="sglang"), "sglang", "dynamo"),
        (model_deployment(engine="sglang", gpu=4), "sglang", "dynamo"),
        (model_deployment(engine="trtllm", gpu=2), "trtllm", "dynamo"),
        (model_deployment(engine="llamacpp"), "llamacpp", "kaito"),
        (model_deployment(engine="llamacpp", gpu=1), "llamacpp", "kaito"),
        (model_deployment(gpu=1, provider="llmd"), "vllm", "llmd"),
        (model_deployment(gpu=1, provider="vllm"), "vllm", "vllm"),
        (model_deployment(gpu=1, provider="kaito"), "vllm", "kaito"),
    ],
    ids=[
        "cpu-only",
        "gpu-zero",
        "cpu-resources",
        "one-gpu",
        "one-gpu-vllm",
        "vllm-default-gpu",
        "two-gpus",
        "eight-gpus-vllm",
        "disaggregated",
        "sglang",
        "sglang-4-gpus",
        "trtllm",
        "llamacpp-cpu",
        "llamacpp-gpu",
        "explicit-llmd",
        "explicit-direct-vllm",
        "explicit-kaito-gpu",
    ],
)
def test_shipped_configs_select(
    obj: dict[str, Any], engine: str, provider: str, shipped: ProviderRegistry
) -> None:
    assert selected(obj, shipped) == (engine, provider)


def test_vllm_without_gpu_has_no_provider_and_every_candidate_says_why(
    shipped: ProviderRegistry,
) -> None:
    result = hydrate(model_deployment(engine="vllm", gpu=0), registry=shipped)

    assert result.provider is None
    assert result.errors == (
        FieldError(
            "spec.provider.name",
            Reason.REQUIRED,
            "no provider can be selected automatically ("
            "dynamo: does not run engine vllm without a GPU; "
            "kaito: does not run engine vllm without a GPU; "
            "kuberay: does not run engine vllm without a GPU; "
            "llmd: does not run engine vllm without a GPU; "
            "vllm: does not run engine vllm without a GPU); set spec.provider.name",
        ),
    )


def test_explicit_only_registry_selects_nothing_and_says_why() -> None:
    registry = registry_of(
        provider_config("llmd", rules=[]),
        provider_config("vllm"),
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert result.engine is not None and result.engine.value == "vllm"
    assert [(c.name, c.priority, c.excluded) for c in trace(model_deployment(gpu=1), registry)] == [
        ("llmd", None, "explicit-only: no selection rules"),
        ("vllm", None, "explicit-only: no selection rules"),
    ]
    assert result.errors == (
        FieldError(
            "spec.provider.name",
            Reason.REQUIRED,
            "no provider can be selected automatically (llmd: explicit-only: no selection rules; "
            "vllm: explicit-only: no selection rules); set spec.provider.name",
        ),
    )


def test_provider_whose_rules_do_not_match_is_explicit_only() -> None:
    registry = registry_of(
        provider_config("dynamo", rules=[("spec.engine.type == 'sglang'", 10)]),
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert [(c.name, c.excluded) for c in trace(model_deployment(gpu=1), registry)] == [
        ("dynamo", "explicit-only here: no selection rule matched"),
    ]
    assert result.provider is None


def test_highest_matching_rule_is_the_priority(shipped: ProviderRegistry) -> None:
    result = hydrate(model_deployment(gpu=2), registry=shipped)

    ranking = {c.name: (c.priority, c.excluded) for c in trace(model_deployment(gpu=2), shipped)}
    assert ranking == {
        "dynamo": (50, None),
        "kaito": (None, "explicit-only here: no selection rule matched"),
        "kuberay": (80, None),
        "llmd": (None, "explicit-only: no selection rules"),
        "vllm": (None, "explicit-only: no selection rules"),
    }
    assert result.provider is not None
    assert result.provider.reason == (
        'auto-selected: rule "has(spec.resources) && has(spec.resources.gpu) && '
        "spec.resources.gpu.count > 1 && spec.engine.type == 'vllm'\" matched at priority 80, "
        "the highest priority matched among dynamo, kaito, kuberay (ties break by name)"
    )


def test_tie_in_priority_breaks_by_smallest_name() -> None:
    registry = registry_of(
        provider_config("llmd", rules=[("true", 70)]),
        provider_config("dynamo", rules=[("spec.engine.type == 'vllm'", 70)]),
        provider_config("kuberay", rules=[("true", 60)]),
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert result.provider is not None
    assert result.provider.value == "dynamo"
    assert result.provider.reason == (
        "auto-selected: rule \"spec.engine.type == 'vllm'\" matched at priority 70, the highest "
        "priority matched among dynamo, kuberay, llmd (ties break by name)"
    )
    assert [(c.name, c.priority) for c in trace(model_deployment(gpu=1), registry)] == [
        ("dynamo", 70),
        ("kuberay", 60),
        ("llmd", 70),
    ]


def test_rule_that_errors_is_a_non_match_and_the_trace_and_warnings_say_so() -> None:
    registry = registry_of(
        provider_config("dynamo", rules=[("spec.resources.gpu.count > 'two'", 90), ("true", 10)]),
    )

    result = hydrate(model_deployment(gpu=2), registry=registry)

    assert result.provider is not None and result.provider.value == "dynamo"
    (candidate,) = trace(model_deployment(gpu=2), registry)
    assert candidate.priority == 10
    assert [(r.condition, r.result, r.error) for r in candidate.rules] == [
        (
            "spec.resources.gpu.count > 'two'",
            "error",
            "UNKNOWN: No matching overloads found : _>_(int64, string)",
        ),
        ("true", True, None),
    ]
    assert result.warnings == (
        "InferenceProviderConfig dynamo: rule \"spec.resources.gpu.count > 'two'\" could not be "
        "evaluated and counts as not matching: "
        "UNKNOWN: No matching overloads found : _>_(int64, string)",
    )


def test_rule_that_does_not_compile_is_reported_and_the_rest_still_select() -> None:
    registry = registry_of(
        provider_config("dynamo", rules=[("spec.engine.type ==", 90), ("true", 5)])
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert registry.problems == (
        "InferenceProviderConfig dynamo rule 0: line 1, column 20: "
        "Syntax error: mismatched input '<EOF>'",
    )
    assert result.provider is not None and result.provider.value == "dynamo"
    rule = trace(model_deployment(gpu=1), registry)[0].rules[0]
    assert (rule.result, rule.error) == (
        "error",
        "does not compile: line 1, column 20: Syntax error: mismatched input '<EOF>'",
    )


def test_rule_returning_a_non_bool_is_a_non_match() -> None:
    registry = registry_of(provider_config("dynamo", rules=[("spec.engine.type", 90)]))

    result = hydrate(model_deployment(gpu=1), registry=registry)

    rule = trace(model_deployment(gpu=1), registry)[0].rules[0]
    assert (rule.result, rule.error) == ("error", "evaluated to string, not a bool")
    assert result.provider is None


def test_rule_statically_typed_as_a_non_bool_is_refused_when_compiled() -> None:
    registry = registry_of(provider_config("dynamo", rules=[("1 + 2", 90)]))

    assert registry.problems == (
        "InferenceProviderConfig dynamo rule 0: evaluates to int, not a bool",
    )


def test_shipped_rules_evaluate_without_errors_when_resources_is_absent(
    shipped: ProviderRegistry,
) -> None:
    rule_results = {
        (c.name, r.condition): r.result for c in trace(model_deployment(), shipped) for r in c.rules
    }
    assert "error" not in rule_results.values()
    assert rule_results == {
        (
            "kaito",
            "!has(spec.resources) || !has(spec.resources.gpu) || spec.resources.gpu.count == 0",
        ): True,
        ("kaito", "spec.engine.type == 'llamacpp'"): True,
    }


def test_not_ready_provider_is_excluded_from_automatic_selection() -> None:
    registry = registry_of(
        provider_config("dynamo", rules=[("true", 90)], ready=False),
        provider_config("kuberay", rules=[("true", 10)], ready=True),
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert [(c.name, c.excluded) for c in trace(model_deployment(gpu=1), registry)] == [
        ("dynamo", "not ready (status.ready is false)"),
        ("kuberay", None),
    ]
    assert result.provider is not None and result.provider.value == "kuberay"


def test_provider_without_a_renderer_is_never_selected() -> None:
    registry = registry_of(
        provider_config("acme", rules=[("true", 100)]),
        provider_config("kuberay", rules=[("true", 10)]),
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert [(c.name, c.priority, c.excluded) for c in trace(model_deployment(gpu=1), registry)] == [
        ("acme", None, "no renderer for provider acme in this Runway"),
        ("kuberay", 10, None),
    ]
    assert result.provider is not None and result.provider.value == "kuberay"


def test_engine_is_not_selected_from_providers_runway_cannot_render() -> None:
    registry = registry_of(provider_config("acme", rules=[("true", 100)]))

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert [e.path for e in result.errors] == ["spec.engine.type"]


def test_engine_preference_follows_vllm_sglang_trtllm_llamacpp() -> None:
    registry = registry_of(
        provider_config(
            "dynamo",
            engines=[engine_capability("trtllm"), engine_capability("sglang")],
            rules=[("true", 1)],
        )
    )

    result = hydrate(model_deployment(gpu=1), registry=registry)

    assert result.engine is not None
    assert (result.engine.value, result.engine.choice) == ("sglang", Choice.AUTO)
    assert result.engine.reason == (
        "auto-selected: sglang is the most preferred engine (vllm > sglang > trtllm > llamacpp) "
        "offered for gpu=true, mode=aggregated by dynamo"
    )


def test_engine_for_an_explicit_provider_comes_from_that_provider(
    shipped: ProviderRegistry,
) -> None:
    result = hydrate(model_deployment(provider="dynamo"), registry=shipped)

    assert result.errors == (
        FieldError(
            "spec.engine.type",
            Reason.REQUIRED,
            "no engine can be selected: provider dynamo offers no engine for gpu=false, "
            "mode=aggregated; set spec.resources.gpu.count > 0",
        ),
    )


def test_no_engine_for_disaggregated_when_no_provider_offers_it() -> None:
    registry = registry_of(provider_config("kaito", rules=[("true", 1)]))

    result = hydrate(disaggregated(), registry=registry)

    assert result.errors == (
        FieldError(
            "spec.engine.type",
            Reason.REQUIRED,
            "no engine can be selected: no ready provider offers an engine for gpu=true, "
            "mode=disaggregated; set spec.engine.type",
        ),
    )


def test_explicit_engine_and_provider_are_recorded_as_explicit(shipped: ProviderRegistry) -> None:
    result = hydrate(model_deployment(engine="vllm", gpu=1, provider="llmd"), registry=shipped)

    assert result.engine is not None and result.provider is not None
    assert (result.engine.choice, result.engine.reason) == (
        Choice.EXPLICIT,
        "set in spec.engine.type",
    )
    assert (result.provider.choice, result.provider.reason) == (
        Choice.EXPLICIT,
        "set in spec.provider.name",
    )
    assert result.warnings == ()
