"""The provider modules and the InferenceProviderConfig registry."""

from __future__ import annotations

import importlib

import pytest

from core.model.plugin import Provider
from core.selection.configs import ProviderRegistry
from providers.modules import plugins
from tests.support.builders import engine_capability, provider_config, registry_of
from tests.support.paths import ROOT

PLUGINS = {plugin.name: plugin for plugin in plugins()}

# What providers/__init__.py promises: every provider package holds its __init__ (building its
# Provider value, exported as PROVIDER) and its InferenceProviderConfig; its other files are its
# own.
PACKAGE_FILES = {"__init__.py", "config.yaml"}


def test_the_five_providers_are_registered_explicitly() -> None:
    assert list(PLUGINS) == ["dynamo", "kaito", "kuberay", "llmd", "vllm"]


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_every_provider_package_exports_its_provider_value_beside_its_config(name: str) -> None:
    folder = ROOT / "providers" / name
    provider = importlib.import_module(f"providers.{name}").PROVIDER

    files = {p.name for p in folder.iterdir() if p.suffix in (".py", ".yaml")}
    assert files >= PACKAGE_FILES
    assert provider is PLUGINS[name]
    assert isinstance(provider, Provider)
    assert name == provider.name
    assert isinstance(provider.overrides.roots, frozenset)


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
    assert dynamo.supports("trtllm", gpu=True, mode="disaggregated")


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
