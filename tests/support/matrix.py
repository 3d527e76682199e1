"""The render matrix: every provider x engine x serving mode x GPU/CPU x gateway on/off x
storage on/off that the shipped provider configs declare, as ModelDeployments."""

from __future__ import annotations

import itertools
from typing import Any

from providers.registry import ProviderRegistry

STORAGE = [
    {"name": "cache", "purpose": "modelCache", "size": "50Gi"},
    {"name": "data", "claimName": "existing-data", "mountPath": "/data"},
]


def cases(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """(id, ModelDeployment) for every combination the shipped configs declare."""
    out = []
    for config in registry.configs.values():
        for engine, capability in sorted(config.engines.items()):
            devices = [d for d, ok in (("gpu", capability.gpu), ("cpu", capability.cpu)) if ok]
            for mode, device, gateway, storage in itertools.product(
                sorted(capability.serving_modes), devices, (False, True), (False, True)
            ):
                ident = "-".join(
                    [config.name, engine, mode, device]
                    + (["gw"] if gateway else [])
                    + (["pvc"] if storage else [])
                )
                out.append(
                    (ident, _deployment(config.name, engine, mode, device, gateway, storage))
                )
    return out


def _deployment(
    provider: str, engine: str, mode: str, device: str, gateway: bool, storage: bool
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "model": {"id": "org/model"},
        "provider": {"name": provider},
        "engine": {"type": engine},
        "serving": {"mode": mode},
    }
    if engine == "llamacpp":  # KAITO runs the user's llama.cpp image; there is no default
        spec["engine"]["image"] = "ghcr.io/kaito-project/aikit/llama3.2:1b"
    if mode == "disaggregated":
        spec["scaling"] = {
            "prefill": {"replicas": 1, "gpu": {"count": 2}},
            "decode": {"replicas": 1, "gpu": {"count": 1}},
        }
    elif device == "gpu":
        spec["resources"] = {"gpu": {"count": 2}}
    else:
        spec["resources"] = {"cpu": "4", "memory": "8Gi"}
    if gateway:
        spec["gateway"] = {"enabled": True}
    if storage:
        spec["model"]["storage"] = {"volumes": [dict(v) for v in STORAGE]}
    name = f"{provider}-{engine}-{mode[:3]}-{device}"
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "matrix"},
        "spec": spec,
    }


def engine_args(objects: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(catalog name, launch args) of every engine container among rendered objects: the vLLM
    server of llm-d and Direct vLLM Deployments, and each Dynamo worker by the module it runs
    (`python3 -m dynamo.sglang` -> dynamo-sglang)."""
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment":
            containers = obj["spec"]["template"]["spec"]["containers"]
            out += [("vllm", c["args"]) for c in containers if c["name"] == "vllm"]
        elif obj["kind"] == "DynamoGraphDeployment":
            for service in obj["spec"]["services"].values():
                if service["componentType"] == "worker":
                    main = service["extraPodSpec"]["mainContainer"]
                    module = main["command"][-1]
                    out.append((module.replace(".", "-"), main["args"]))
    return out
