"""Parity with AI Runway's admission: the Dynamo mocker test backend, every error at once on
UPDATE, duplicate volume names on `.name`, and empty quantity strings."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.pipeline import admit
from core.fields.errors import Reason
from core.model.kinds import ModelDeployment
from core.rendering.inferencegateway import GatewayTarget
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from providers.modules import plugins
from renderer.output.render import RenderContext, render_many
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import model_deployment

PLUGINS = {plugin.name: plugin for plugin in plugins()}

PINS = bundled_versions()
MOCKER = {"airunway.ai/dynamo-test-backend": "mocker"}
PLANNER = f"nvcr.io/nvidia/ai-dynamo/dynamo-planner:{PINS.pin('dynamo')}"
SMALL = {"cpu": "100m", "memory": "256Mi"}
MOCKER_ARGS = [
    "--model-path", "Qwen/Qwen3-0.6B", "--model-name", "qwen3", "--speedup-ratio", "1000.0",
    "--num-gpu-blocks-override", "4096", "--block-size", "16", "--max-num-seqs", "64",
]  # fmt: skip


def mocker(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("provider", "dynamo")
    kwargs.setdefault("annotations", dict(MOCKER))
    return model_deployment(
        "mock",
        "models",
        model_id="Qwen/Qwen3-0.6B",
        model={"id": "Qwen/Qwen3-0.6B", "servedName": "qwen3"},
        **kwargs,
    )


def disaggregated_mocker(**kwargs: Any) -> dict[str, Any]:
    return mocker(
        engine="vllm",
        mode="disaggregated",
        scaling={"prefill": {"replicas": 1}, "decode": {"replicas": 2}},
        **kwargs,
    )


def problems(
    obj: dict[str, Any], registry: ProviderRegistry, **kwargs: Any
) -> list[tuple[str, Reason]]:
    return [(e.path, e.reason) for e in admit(obj, registry=registry, **kwargs).errors]


def render_dgd(obj: dict[str, Any], registry: ProviderRegistry) -> dict[str, Any]:
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    (graph,) = PLUGINS["dynamo"].render(
        ModelDeployment(admission.obj), PINS, registry.context("dynamo")
    )
    return graph


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (mocker(engine="vllm", gpu=0), []),
        (mocker(), []),
        (disaggregated_mocker(), []),
        (
            model_deployment("real", engine="vllm", gpu=0, provider="dynamo", annotations={"airunway.ai/dynamo-test-backend": "real"}),
            [("spec.resources.gpu.count", Reason.UNSUPPORTED)],
        ),
        (
            model_deployment("plain", engine="vllm", provider="dynamo", mode="disaggregated", scaling={"prefill": {"replicas": 1}, "decode": {"replicas": 1}}),
            [("spec.scaling.prefill.gpu.count", Reason.REQUIRED), ("spec.scaling.decode.gpu.count", Reason.REQUIRED)],
        ),
        (mocker(engine="sglang", gpu=0), [("spec.engine.type", Reason.UNSUPPORTED)]),
        (mocker(engine="vllm", mode="disaggregated", scaling={}), [("spec.scaling.prefill", Reason.REQUIRED), ("spec.scaling.decode", Reason.REQUIRED)]),
    ],
    ids=[
        "cpu-only-vllm", "engine-chosen", "disaggregated-without-gpus", "other-annotation-value",
        "disaggregated-without-annotation", "sglang-refused", "blocks-still-required",
    ],
)  # fmt: skip
def test_mocker_admission_matches_ai_runway(
    obj: dict[str, Any], expected: list[tuple[str, Reason]], shipped: ProviderRegistry
) -> None:
    assert problems(obj, shipped) == expected


def test_mocker_refuses_another_engine_with_ai_runways_message(shipped: ProviderRegistry) -> None:
    (error,) = admit(mocker(engine="trtllm", gpu=0), registry=shipped).errors

    assert str(error) == (
        "spec.engine.type: Unsupported value: the dynamo mocker test backend only supports the vllm engine"
    )


def test_mocker_engine_is_chosen_as_vllm_and_says_why(shipped: ProviderRegistry) -> None:
    admission = admit(mocker(), registry=shipped)

    assert admission.obj["spec"]["engine"]["type"] == "vllm"
    assert admission.obj["spec"]["resources"] == {"gpu": {"count": 0, "type": "nvidia.com/gpu"}}
    assert admission.obj["metadata"]["annotations"] == {
        **MOCKER,
        "airunway.ai/engine-selection": "auto",
        "airunway.ai/engine-selected-reason": "auto-selected: the dynamo mocker test backend runs only vllm",
        "airunway.ai/provider-selection": "explicit",
        "airunway.ai/provider-selected-reason": "set in spec.provider.name",
    }


# The securityContext Runway writes for a root image (core/rendering/podsecurity.py ROOT_IMAGE).
NO_ESCALATION = {"allowPrivilegeEscalation": False}
RUNTIME_DEFAULT = {"seccompProfile": {"type": "RuntimeDefault"}}


def test_mocker_renders_mocker_workers_behind_a_standalone_frontend(
    shipped: ProviderRegistry,
) -> None:
    graph = render_dgd(mocker(), shipped)

    assert graph["spec"] == {
        "backendFramework": "vllm",
        "services": {
            "Frontend": {
                "componentType": "frontend",
                "replicas": 1,
                "resources": {"requests": SMALL},
                "extraPodSpec": {
                    "mainContainer": {"image": PLANNER, "securityContext": NO_ESCALATION},
                    "securityContext": RUNTIME_DEFAULT,
                },
                "envs": [{"name": "DYN_ROUTER_MODE", "value": "round-robin"}],
            },
            "VllmWorker": {
                "componentType": "worker",
                "replicas": 1,
                "resources": {"requests": SMALL, "limits": SMALL},
                "extraPodSpec": {
                    "mainContainer": {
                        "image": PLANNER,
                        "command": ["python3", "-m", "dynamo.mocker"],
                        "args": MOCKER_ARGS,
                        "securityContext": NO_ESCALATION,
                    },
                    "securityContext": RUNTIME_DEFAULT,
                },
            },
        },
    }


def test_mocker_disaggregated_workers_keep_their_role_and_replicas(
    shipped: ProviderRegistry,
) -> None:
    services = render_dgd(disaggregated_mocker(), shipped)["spec"]["services"]

    assert sorted(services) == ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]
    for key, role, replicas in (
        ("VllmPrefillWorker", "prefill", 1),
        ("VllmDecodeWorker", "decode", 2),
    ):
        worker = services[key]
        assert (worker["subComponentType"], worker["replicas"]) == (role, replicas)
        assert worker["resources"] == {"requests": SMALL, "limits": SMALL}
        assert worker["extraPodSpec"]["mainContainer"]["args"] == [
            *MOCKER_ARGS,
            "--disaggregation-mode",
            role,
        ]


def test_mocker_image_wins_over_an_engine_image(shipped: ProviderRegistry) -> None:
    services = render_dgd(
        mocker(engine={"type": "vllm", "image": "registry.example.com/vllm:1"}, gpu=0), shipped
    )["spec"]["services"]

    assert {s["extraPodSpec"]["mainContainer"]["image"] for s in services.values()} == {PLANNER}


def test_mocker_with_the_gateway_renders_no_gateway_objects_and_warns(
    shipped: ProviderRegistry,
) -> None:
    obj = mocker(gateway={"enabled": True})
    schemas = Schemas.from_pack(load_pack())

    (result,) = render_many(
        [obj],
        previous={},
        context=RenderContext(shipped, schemas, PINS, GatewayTarget("gw", "gateways")),
    )

    assert result.error is None
    assert sorted(result.files) == [
        "dynamographdeployment-mock.yaml",
        "kustomization.yaml",
        "modeldeployment.yaml",
    ]
    assert result.warnings == (
        "spec.gateway.enabled is ignored by the dynamo mocker test backend: it serves through a "
        "standalone Frontend, with no endpoint picker and no gateway objects",
    )
    assert "Epp" not in result.files["dynamographdeployment-mock.yaml"]
    assert "frontendSidecar" not in result.files["dynamographdeployment-mock.yaml"]


def test_the_annotation_does_nothing_on_another_provider(shipped: ProviderRegistry) -> None:
    obj = model_deployment("k", gpu=0, engine="vllm", provider="kaito", annotations=dict(MOCKER))

    assert problems(obj, shipped) == [("spec.resources.gpu.count", Reason.UNSUPPORTED)]


def test_every_error_is_reported_on_update_when_selection_fails(shipped: ProviderRegistry) -> None:
    """An object stored by AI Runway (nothing stamped) moved from dynamo to vllm with no GPU: the
    engine cannot be selected any more, and the provider change is refused too."""
    old = model_deployment("q", provider="dynamo", gpu=1)
    new = model_deployment(
        "q", provider="vllm", gpu=0, resources={"gpu": {"count": 0}, "cpu": "abc"}
    )

    errors = admit(new, old=old, registry=shipped).errors

    assert [(e.path, e.reason) for e in errors] == [
        ("spec.engine.type", Reason.REQUIRED),
        ("spec.resources.cpu", Reason.INVALID),
        ("spec.provider.name", Reason.IMMUTABLE),
    ]
    assert str(errors[2]) == (
        'spec.provider.name: Immutable: is immutable (was "dynamo", now "vllm"); changing it '
        "requires deleting and recreating the ModelDeployment"
    )


def test_every_error_is_reported_on_create_when_selection_fails(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        "q", gpu=0, engine="vllm", resources={"gpu": {"count": 0}, "memory": "lots"}
    )

    assert problems(obj, shipped) == [
        ("spec.provider.name", Reason.REQUIRED),
        ("spec.resources.memory", Reason.INVALID),
    ]


@pytest.mark.parametrize("field", ["cpu", "memory"])
def test_an_empty_quantity_string_is_unset(field: str, shipped: ProviderRegistry) -> None:
    obj = model_deployment("e", gpu=1, engine="vllm", resources={"gpu": {"count": 1}, field: ""})

    assert problems(obj, shipped) == []


@pytest.mark.parametrize("provider", ["dynamo", "kaito", "kuberay", "llmd", "vllm"])
def test_an_empty_quantity_string_is_never_rendered(
    provider: str, shipped: ProviderRegistry
) -> None:
    resources = {"gpu": {"count": 1}, "cpu": "", "memory": ""}
    obj = model_deployment(
        "e", "models", gpu=1, engine="vllm", provider=provider, resources=resources
    )

    (result,) = render_many(
        [obj], previous={}, context=RenderContext(shipped, Schemas.from_pack(load_pack()), PINS)
    )

    assert result.error is None
    rendered = "".join(
        text for name, text in result.files.items() if name != "modeldeployment.yaml"
    )
    assert "cpu: ''" not in rendered and "memory: ''" not in rendered


def test_an_empty_volume_size_is_still_refused(shipped: ProviderRegistry) -> None:
    """size is declared a quantity (int-or-string with the quantity pattern): "" is invalid."""
    volume = {"name": "cache", "size": "", "purpose": "modelCache"}
    obj = model_deployment(
        "v", gpu=1, engine="vllm", model={"id": "org/model", "storage": {"volumes": [volume]}}
    )

    assert problems(obj, shipped) == [("spec.model.storage.volumes[0].size", Reason.INVALID)]
