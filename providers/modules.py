"""The provider plug-ins Runway ships, in one list apart from the registry (core/selection/
configs.py), so that no provider import creates a cycle: a sixth provider is one package and
one line here."""

from __future__ import annotations

from core.model.plugin import ProviderPlugin
from providers import dynamo, kaito, kuberay, llmd, vllm


def plugins() -> tuple[ProviderPlugin, ...]:
    """Every shipped provider, in name order."""
    return (dynamo, kaito, kuberay, llmd, vllm)
