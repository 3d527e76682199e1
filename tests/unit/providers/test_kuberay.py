"""KubeRay: the Ray Serve LLM config inside the RayService is what Ray's builders accept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from providers.kuberay import PROVIDER as KUBERAY
from tests.support.builders import model_deployment

PINS = bundled_versions()


def serve_config(obj: dict[str, Any], registry: ProviderRegistry) -> dict[str, Any]:
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    (service,) = KUBERAY.render(ModelDeployment(admission.obj), PINS, registry.context("kuberay"))
    config: dict[str, Any] = json.loads(service["spec"]["serveConfigV2"])
    return config


def pd(**engine: Any) -> dict[str, Any]:
    return model_deployment(
        "pd",
        provider="kuberay",
        mode="disaggregated",
        engine={"type": "vllm", **engine},
        scaling={"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 2}}},
    )


def aggregated(args: dict[str, str], **engine: Any) -> dict[str, Any]:
    return model_deployment(
        gpu=2, provider="kuberay", engine={"type": "vllm", "args": args, **engine}
    )


def test_disaggregated_configs_both_carry_a_kv_transfer_config(shipped: ProviderRegistry) -> None:
    # Ray's PDServingArgs raises "kv_transfer_config is required for P/D disaggregation" when
    # either side lacks it.
    (app,) = serve_config(pd(), shipped)["applications"]

    assert app["import_path"] == "ray.serve.llm:build_pd_openai_app"
    assert sorted(app["args"]) == ["decode_config", "prefill_config"]
    assert {role: config["engine_kwargs"] for role, config in app["args"].items()} == {
        "prefill_config": {
            "tensor_parallel_size": 1,
            "enable_prefix_caching": True,
            "kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
        },
        "decode_config": {
            "tensor_parallel_size": 2,
            "enable_prefix_caching": True,
            "kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
        },
    }
    # and the same model id on both sides (PDServingArgs refuses a mismatch)
    assert {c["model_loading_config"]["model_id"] for c in app["args"].values()} == {"org/model"}


def test_a_users_kv_transfer_config_replaces_the_default(shipped: ProviderRegistry) -> None:
    connector = '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'
    (app,) = serve_config(pd(args={"kv-transfer-config": connector}), shipped)["applications"]

    assert [c["engine_kwargs"]["kv_transfer_config"] for c in app["args"].values()] == [
        {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
    ] * 2


def test_aggregated_config_has_no_kv_transfer_config(shipped: ProviderRegistry) -> None:
    (app,) = serve_config(aggregated({}), shipped)["applications"]
    (config,) = app["args"]["llm_configs"]

    assert config["engine_kwargs"] == {"tensor_parallel_size": 2, "enable_prefix_caching": True}


@pytest.mark.parametrize(
    ("key", "value", "kwarg", "typed"),
    [
        ("enable-chunked-prefill", "", "enable_chunked_prefill", True),
        ("no-enable-chunked-prefill", "", "enable_chunked_prefill", False),
        ("enable-chunked-prefill", "false", "enable_chunked_prefill", False),
        ("enable-chunked-prefill", "True", "enable_chunked_prefill", True),
        ("max-num-seqs", "64", "max_num_seqs", 64),
        ("seed", "-1", "seed", -1),
        ("gpu-memory-utilization", "0.9", "gpu_memory_utilization", 0.9),
        ("cpu-offload-gb", "1e1", "cpu_offload_gb", 10.0),
        ("revision", "20240101", "revision", "20240101"),
        ("tokenizer-revision", "3", "tokenizer_revision", "3"),
        ("dtype", "bfloat16", "dtype", "bfloat16"),
        ("compilation-config", '{"level": 3}', "compilation_config", {"level": 3}),
        ("allowed-origins", '["a", "b"]', "allowed_origins", ["a", "b"]),
        ("chat-template", "{not json", "chat_template", "{not json"),
    ],
    ids=[
        "bare-flag-is-true",
        "bare-no-flag-is-false",
        "false",
        "true-any-case",
        "int",
        "negative-int",
        "float",
        "exponent-float",
        "str-flag-stays-str",
        "str-flag-small-number",
        "word",
        "json-object",
        "json-list",
        "not-json-stays-str",
    ],
)
def test_engine_args_are_typed_as_vllm_takes_them(
    shipped: ProviderRegistry, key: str, value: str, kwarg: str, typed: Any
) -> None:
    (app,) = serve_config(aggregated({key: value}), shipped)["applications"]
    (config,) = app["args"]["llm_configs"]

    assert config["engine_kwargs"][kwarg] == typed
    assert type(config["engine_kwargs"][kwarg]) is type(typed)


def test_the_switches_runway_sets_are_refused_in_engine_args(shipped: ProviderRegistry) -> None:
    """engine_kwargs used to take any key (enforce_eager twice, a tensor-parallel size against
    the GPUs): now Runway's switches point at their spec fields, as on every vLLM provider."""
    obj = aggregated(
        {"enforce-eager": "", "tensor-parallel-size": "8", "no-enable-prefix-caching": ""},
        enforceEager=True,
    )

    assert [(e.path, e.reason, e.detail) for e in admit(obj, registry=shipped).errors] == [
        (
            "spec.engine.args[enforce-eager]",
            "Forbidden",
            "--enforce-eager: set spec.engine.enforceEager",
        ),
        (
            "spec.engine.args[no-enable-prefix-caching]",
            "Forbidden",
            "--no-enable-prefix-caching: set spec.engine.enablePrefixCaching",
        ),
        (
            "spec.engine.args[tensor-parallel-size]",
            "Forbidden",
            "--tensor-parallel-size: set spec.resources.gpu.count (or the component's "
            "gpu.count); Runway sets the tensor-parallel size to it",
        ),
    ]


@pytest.mark.parametrize(
    ("gateway", "served", "expected"),
    [
        ({"enabled": True, "modelName": "route-me"}, None, "route-me"),
        ({"enabled": True, "modelName": "route-me"}, "served", "route-me"),
        ({"enabled": True}, "served", "served"),
        ({"enabled": False, "modelName": "route-me"}, None, "org/model"),
        ({}, None, "org/model"),
    ],
)
def test_ray_serve_answers_to_the_name_the_route_matches(
    shipped: ProviderRegistry, gateway: dict[str, Any], served: str | None, expected: str
) -> None:
    """The HTTPRoute matches spec.gateway.modelName; Ray Serve's OpenAI app answers only to its
    model_id, so that is the same name (as vLLM's --served-model-name is)."""
    model = {"id": "org/model", **({"servedName": served} if served else {})}
    obj = model_deployment(gpu=1, provider="kuberay", engine="vllm", gateway=gateway, model=model)
    (app,) = serve_config(obj, shipped)["applications"]

    assert [c["model_loading_config"]["model_id"] for c in app["args"]["llm_configs"]] == [expected]
