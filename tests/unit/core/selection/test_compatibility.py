"""The explicit-provider compatibility rule, once (core.selection.compatibility): how a
provider fits a ModelDeployment, for every answer it gives; validation denies and `explain`
explains from this one answer."""

from __future__ import annotations

from typing import Any

import pytest

from core.model.kinds import ModelDeployment
from core.selection.compatibility import Compatibility, Fit, compatibility
from core.selection.configs import ProviderRegistry
from tests.support.builders import model_deployment, provider_config, registry_of, shipped_registry

SHIPPED = shipped_registry()
MOCKER = {"airunway.ai/dynamo-test-backend": "mocker"}
WITHOUT_GPU = "does not run engine vllm without a GPU"


@pytest.mark.parametrize(
    ("obj", "registry", "expected"),
    [
        (
            model_deployment(gpu=0, engine="vllm", provider="kaito"),
            SHIPPED,
            Compatibility(Fit.MISMATCH, "spec.resources.gpu.count", WITHOUT_GPU, ready=True),
        ),
        (
            model_deployment(gpu=2, engine="vllm", provider="kuberay"),
            SHIPPED,
            Compatibility(Fit.RUNS, ready=True),
        ),
        (
            model_deployment(gpu=0, engine="vllm", provider="dynamo", annotations=MOCKER),
            SHIPPED,
            Compatibility(Fit.TEST_BACKEND, ready=True),
        ),
        (
            model_deployment(gpu=1, engine="sglang", provider="kuberay"),
            SHIPPED,
            Compatibility(
                Fit.MISMATCH,
                "spec.engine.type",
                "does not offer engine sglang (offers: vllm)",
                ready=True,
            ),
        ),
        (
            model_deployment(gpu=1, engine="vllm", provider="nope"),
            SHIPPED,
            Compatibility(Fit.NOT_FOUND),
        ),
        (
            model_deployment(gpu=1, engine="vllm", provider="custom"),
            registry_of(provider_config("custom")),
            Compatibility(Fit.NO_RENDERER, ready=True),
        ),
        (
            model_deployment(gpu=1, engine="vllm", provider="vllm"),
            registry_of(provider_config("vllm", ready=False)),
            Compatibility(Fit.RUNS, ready=False),
        ),
    ],
    ids=[
        "mismatch",
        "runs",
        "test-backend",
        "engine-not-offered",
        "not-found",
        "no-renderer",
        "not-ready",
    ],
)
def test_how_a_provider_fits(
    obj: dict[str, Any], registry: ProviderRegistry, expected: Compatibility
) -> None:
    assert compatibility(ModelDeployment(obj), registry) == expected


@pytest.mark.parametrize(
    ("fit", "denied"),
    [
        (Fit.RUNS, False),
        (Fit.TEST_BACKEND, False),
        (Fit.NOT_FOUND, True),
        (Fit.NO_RENDERER, True),
        (Fit.MISMATCH, True),
    ],
    ids=str,
)
def test_admission_denies_a_provider_that_does_not_fit(fit: Fit, denied: bool) -> None:
    assert Compatibility(fit).denied is denied
