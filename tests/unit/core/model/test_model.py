"""Typed read-only views over the plain dicts."""

from __future__ import annotations

from core.model.kinds import (
    ExternalModelProvider,
    InferenceProviderConfig,
    ModelDeployment,
    dig,
)
from tests.support.builders import model_deployment, provider_config


def test_model_deployment_view_reads_the_spec() -> None:
    obj = model_deployment(
        "llama",
        "ml",
        gpu=2,
        engine={"type": "vllm", "image": "a:1"},
        image="b:2",
        mode="disaggregated",
    )

    md = ModelDeployment(obj)

    assert (md.name, md.namespace, md.model_id, md.model_source) == (
        "llama",
        "ml",
        "org/model",
        "huggingface",
    )
    assert (md.engine_type, md.image_override, md.legacy_image) == ("vllm", "a:1", "b:2")
    assert (md.gpu_count, md.serving_mode, md.is_disaggregated, md.needs_gpu) == (
        2,
        "disaggregated",
        True,
        True,
    )
    assert (md.provider_name, md.overrides, md.volumes) == ("", None, [])


def test_views_answer_defaults_for_missing_or_mistyped_fields() -> None:
    md = ModelDeployment(
        {"spec": {"resources": {"gpu": {"count": "two"}}, "engine": [], "model": "x"}}
    )

    assert (md.name, md.gpu_count, md.engine_type, md.model_id, md.serving_mode) == (
        "",
        0,
        "",
        "",
        "aggregated",
    )
    assert md.needs_gpu is False
    assert dig({"a": [1]}, "a", "b") is None


def test_recorded_selection_falls_back_to_ai_runway_status() -> None:
    obj = model_deployment()
    obj["status"] = {"provider": {"name": "kaito"}, "engine": {"type": "llamacpp"}}

    md = ModelDeployment(obj)

    assert (md.recorded_provider, md.recorded_engine) == ("kaito", "llamacpp")


def test_provider_config_view_and_readiness() -> None:
    with_status = provider_config("dynamo", rules=[("true", 5)], ready=False)

    view = InferenceProviderConfig(with_status)

    assert (view.name, view.ready, [r["priority"] for r in view.rules]) == ("dynamo", False, [5])
    assert InferenceProviderConfig(provider_config("kaito")).ready is True
    assert InferenceProviderConfig({"status": {"ready": "yes"}}).ready is False


def test_external_model_provider_view() -> None:
    emp = ExternalModelProvider(
        {
            "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
            "kind": "ExternalModelProvider",
            "metadata": {"name": "openai", "namespace": "gw"},
            "spec": {
                "baseURL": "https://api.example.com/v1",
                "credentialsSecretRef": {"name": "openai-key"},
                "models": [{"servedName": "gpt-x"}, {"servedName": "gpt-y", "upstreamModel": "y"}],
            },
        }
    )

    assert (emp.name, emp.namespace, emp.base_url) == ("openai", "gw", "https://api.example.com/v1")
    assert (emp.secret_name, emp.secret_key, emp.served_names) == (
        "openai-key",
        "apiKey",
        ["gpt-x", "gpt-y"],
    )
