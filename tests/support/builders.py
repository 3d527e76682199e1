"""Small builders that return fresh dicts for one test each."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects


def model_deployment(
    name: str = "m",
    namespace: str = "ns",
    *,
    model_id: str | None = "org/model",
    gpu: int | None = None,
    engine: str | dict[str, Any] | None = None,
    provider: str | None = None,
    overrides: Any = None,
    mode: str | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A ModelDeployment; keyword arguments beyond the named ones become spec fields."""
    body: dict[str, Any] = {"model": {"id": model_id} if model_id is not None else {}}
    if gpu is not None:
        body["resources"] = {"gpu": {"count": gpu}}
    if engine is not None:
        body["engine"] = {"type": engine} if isinstance(engine, str) else engine
    if provider is not None or overrides is not None:
        body["provider"] = {}
        if provider is not None:
            body["provider"]["name"] = provider
        if overrides is not None:
            body["provider"]["overrides"] = overrides
    if mode is not None:
        body["serving"] = {"mode": mode}
    body.update(spec)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": metadata,
        "spec": body,
    }


def external_model_provider(
    name: str = "example", namespace: str = "gw", **spec: Any
) -> dict[str, Any]:
    """An ExternalModelProvider; keyword arguments replace spec fields (None removes one)."""
    body: dict[str, Any] = {
        "baseURL": "https://api.example.com/v1",
        "credentialsSecretRef": {"name": "provider-key", "key": "apiKey"},
        "models": [{"servedName": "gpt-x"}],
    }
    body.update(spec)
    return {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def disaggregated(name: str = "pd", *, prefill_gpu: int = 1, decode_gpu: int = 1) -> dict[str, Any]:
    """A valid disaggregated ModelDeployment."""
    return model_deployment(
        name,
        mode="disaggregated",
        scaling={
            "prefill": {"gpu": {"count": prefill_gpu}},
            "decode": {"gpu": {"count": decode_gpu}},
        },
    )


def engine_capability(
    name: str = "vllm",
    *,
    modes: tuple[str, ...] = ("aggregated",),
    gpu: bool = True,
    cpu: bool = False,
) -> dict[str, Any]:
    return {"name": name, "servingModes": list(modes), "gpuSupport": gpu, "cpuSupport": cpu}


def provider_config(
    name: str,
    *,
    engines: list[dict[str, Any]] | None = None,
    rules: list[tuple[str, int]] | None = None,
    ready: bool | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An InferenceProviderConfig; `rules` as (condition, priority) pairs. A `kaito` config
    gets KAITO on its own nodes (no node auto-provisioning) unless `annotations` say otherwise,
    so that KAITO's instance-type rule stays out of tests about something else."""
    if annotations is None and name == "kaito":
        annotations = {"kaito.airunway.ai/node-auto-provisioning": "false"}
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    obj: dict[str, Any] = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "InferenceProviderConfig",
        "metadata": metadata,
        "spec": {
            "capabilities": {"engines": engines if engines is not None else [engine_capability()]},
            "selectionRules": [{"condition": c, "priority": p} for c, p in rules or []],
        },
    }
    if ready is not None:
        obj["status"] = {"ready": ready}
    return obj


def shipped_registry() -> ProviderRegistry:
    """The shipped configs and the shipped engine flag catalogs, as the edges load them."""
    return build_registry(bundled_config_objects())


def registry_of(*configs: dict[str, Any]) -> ProviderRegistry:
    return build_registry(configs, flags={})


@st.composite
def model_deployments(draw: st.DrawFn) -> dict[str, Any]:
    """ModelDeployments of every shape selection and defaults meet: engines, providers, modes,
    volumes, annotations, explicit and missing fields."""
    mode = draw(st.sampled_from([None, "aggregated", "disaggregated"]))
    spec: dict[str, Any] = {}
    if mode == "disaggregated":
        spec["scaling"] = {
            role: {"replicas": draw(st.integers(1, 3)), "gpu": {"count": draw(st.integers(1, 4))}}
            for role in ("prefill", "decode")
        }
    elif draw(st.booleans()):
        spec["scaling"] = {"replicas": draw(st.integers(1, 4))}
    if draw(st.booleans()):
        spec["model"] = {
            "id": "org/model",
            "storage": {
                "volumes": [
                    {
                        "name": f"v{i}",
                        **({"size": "10Gi"} if draw(st.booleans()) else {}),
                        **({"purpose": "modelCache"} if draw(st.booleans()) else {}),
                    }
                    for i in range(draw(st.integers(0, 2)))
                ]
            },
        }
    annotations = draw(
        st.none()
        | st.dictionaries(
            st.sampled_from(
                [
                    "airunway.ai/engine-selection",
                    "airunway.ai/provider-selection",
                    "airunway.ai/dynamo-test-backend",
                    "team/a~b",
                    "x",
                ]
            ),
            st.sampled_from(["auto", "explicit", "mocker", "", "v"]),
            max_size=3,
        )
    )
    obj = model_deployment(
        draw(st.sampled_from(["m", "llama"])),
        draw(st.sampled_from(["models", "team-a"])),
        gpu=draw(st.sampled_from([None, 0, 1, 2, 8])),
        engine=draw(st.sampled_from([None, "vllm", "sglang", "trtllm", "llamacpp"])),
        provider=draw(st.sampled_from([None, "dynamo", "kaito", "kuberay", "llmd", "vllm"])),
        mode=mode,
        annotations=annotations,
    )
    obj["spec"].update(spec)
    return obj
