"""The provider modules and the InferenceProviderConfig registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from providers.registry import MODULES, ProviderRegistry
from tests.support.builders import engine_capability, provider_config, registry_of

PUBLIC_NAMES = {"NAME", "OVERRIDE_ROOTS", "check_overrides", "render"}


def test_the_five_providers_are_registered_explicitly() -> None:
    assert list(MODULES) == ["dynamo", "kaito", "kuberay", "llmd", "vllm"]


def defined_names(path: str) -> set[str]:
    """The public names a module defines at its top level (imports excluded)."""
    tree = ast.parse(Path(path).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_provider_module_has_the_same_public_names(name: str) -> None:
    module = MODULES[name]

    assert module.__file__ is not None
    assert defined_names(module.__file__) == PUBLIC_NAMES
    assert name == module.NAME
    assert isinstance(module.OVERRIDE_ROOTS, frozenset)


def test_shipped_configs_load_without_problems(shipped: ProviderRegistry) -> None:
    assert list(shipped.configs) == ["dynamo", "kaito", "kuberay", "llmd", "vllm"]
    assert shipped.problems == ()
    assert {n: sorted(c.engines) for n, c in shipped.configs.items()} == {
        "dynamo": ["sglang", "trtllm", "vllm"],
        "kaito": ["llamacpp", "vllm"],
        "kuberay": ["vllm"],
        "llmd": ["vllm"],
        "vllm": ["vllm"],
    }
    assert {n: [(r.condition, r.priority) for r in c.rules] for n, c in shipped.configs.items()}[
        "kaito"
    ] == [
        ("!has(spec.resources) || !has(spec.resources.gpu) || spec.resources.gpu.count == 0", 100),
        ("spec.engine.type == 'llamacpp'", 100),
    ]
    assert all(c.ready for c in shipped.configs.values())


def test_capabilities_follow_the_shipped_matrix(shipped: ProviderRegistry) -> None:
    kaito, dynamo = shipped.configs["kaito"], shipped.configs["dynamo"]

    assert kaito.supports("llamacpp", gpu=False, mode="aggregated")
    assert not kaito.supports("vllm", gpu=False, mode="aggregated")
    assert not kaito.supports("vllm", gpu=True, mode="disaggregated")
    assert dynamo.supports("sglang", gpu=True, mode="disaggregated")
    assert not dynamo.supports("trtllm", gpu=True, mode="disaggregated")


def test_broken_configs_are_skipped_and_reported_and_the_rest_load() -> None:
    bad_engine = provider_config("kuberay", engines=[engine_capability("tgi")])
    no_name = provider_config("")
    registry = registry_of(
        provider_config("dynamo"),
        bad_engine,
        no_name,
        provider_config("dynamo", rules=[("true", 1)]),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
    )

    assert list(registry.configs) == ["dynamo"]
    assert registry.configs["dynamo"].rules == ()
    assert registry.problems == (
        'InferenceProviderConfig kuberay skipped: spec.capabilities.engines[0].name: Unsupported value: supported values: "vllm", "sglang", "trtllm", "llamacpp"',
        "InferenceProviderConfig <unnamed> skipped: metadata.name: Required value: the provider's name",
        "InferenceProviderConfig dynamo defined twice; the first one is used",
        "InferenceProviderConfig x skipped: kind: Invalid value: expected airunway.ai/v1alpha1 InferenceProviderConfig",
    )


def test_rules_longer_than_the_limit_are_rejected_at_load() -> None:
    registry = registry_of(provider_config("dynamo", rules=[("true || " * 200 + "true", 1)]))

    assert registry.problems == (
        "InferenceProviderConfig dynamo skipped: spec.selectionRules[0].condition: Too long: may not be longer than 1024",
    )


def test_status_ready_false_marks_a_config_not_ready() -> None:
    registry = registry_of(
        provider_config("dynamo", ready=False),
        provider_config("kaito", ready=True),
        provider_config("llmd"),
    )

    assert [c.name for c in registry.ready()] == ["kaito", "llmd"]
