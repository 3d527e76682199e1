"""KubeRay: one ray.io RayService per ModelDeployment."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from providers.errors import FieldError
from providers.fieldpath import FieldPath
from providers.model import ModelDeployment, dig
from providers.rendering import (
    container_resources,
    env,
    gpu_type,
    object_meta,
    placement,
    pod_labels,
)
from providers.versions import Versions

NAME = "kuberay"
# KubeRay consumes no overrides. An empty OVERRIDE_ROOTS means exactly that: whatever passes
# layer 1 is accepted and ignored, and admission warns, because the RayService is rendered from
# the ModelDeployment spec alone.
OVERRIDE_ROOTS: frozenset[str] = frozenset()


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: nothing to check; the overrides are not used."""
    return []


_RAY_IMAGE = "rayproject/ray-llm:{version}-py311-cu128"
_IGNORED_ANNOTATION = "airunway.ai/overrides-ignored"


def render(md: ModelDeployment, pins: Versions) -> list[dict[str, Any]]:
    """One RayService: a head, GPU worker groups, and a Ray Serve LLM application."""
    image = md.image_override or _RAY_IMAGE.format(version=pins.ray)
    if md.is_disaggregated:
        parts = {role: dig(md.spec, "scaling", role) or {} for role in ("prefill", "decode")}
        application = {
            "import_path": "ray.serve.llm:build_pd_openai_app",
            "args": {
                f"{role}_config": _llm_config(md, _gpus(part), int(part.get("replicas", 1)))
                for role, part in parts.items()
            },
        }
        workers = [
            _workers(
                md,
                f"{role}-workers",
                image=image,
                gpus=_gpus(part),
                replicas=int(part.get("replicas", 1)),
                memory=part.get("memory"),
            )
            for role, part in parts.items()
        ]
    else:
        replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
        application = {
            "import_path": "ray.serve.llm:build_openai_app",
            "args": {"llm_configs": [_llm_config(md, md.gpu_count, replicas)]},
        }
        workers = [
            _workers(
                md,
                "gpu-workers",
                image=image,
                gpus=md.gpu_count,
                replicas=replicas,
                memory=md.spec.get("resources", {}).get("memory"),
            )
        ]
    serve = {"applications": [{"name": "llm", "route_prefix": "/", **application}]}
    metadata = object_meta(md, md.name)
    if md.overrides is not None:
        metadata["annotations"][_IGNORED_ANNOTATION] = (
            "spec.provider.overrides is not used by the kuberay provider"
        )
    head = {
        "rayStartParams": {"dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": image,
                        "env": env(md),
                        "ports": [
                            {"name": "gcs", "containerPort": 6379, "protocol": "TCP"},
                            {"name": "dashboard", "containerPort": 8265, "protocol": "TCP"},
                            {"name": "serve", "containerPort": 8000, "protocol": "TCP"},
                        ],
                        "resources": {
                            "limits": {"cpu": "4", "memory": "16Gi"},
                            "requests": {"cpu": "4", "memory": "16Gi"},
                        },
                    }
                ],
                **placement(md),
            },
        },
    }
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": metadata,
        # JSON is YAML: a deterministic, sorted serve config without a YAML library in the core.
        "spec": {
            "serveConfigV2": json.dumps(serve, indent=2, sort_keys=True),
            "rayClusterConfig": {"headGroupSpec": head, "workerGroupSpecs": workers},
        },
    }
    return [service]


def _gpus(part: Mapping[str, Any]) -> int:
    return int(dig(part, "gpu", "count") or 0)


def _llm_config(md: ModelDeployment, gpus: int, replicas: int) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "tensor_parallel_size": max(gpus, 1),
        "enable_prefix_caching": bool(md.engine.get("enablePrefixCaching", True)),
    }
    if md.engine.get("contextLength"):
        engine["max_model_len"] = int(md.engine["contextLength"])
    for key, flag in (("trustRemoteCode", "trust_remote_code"), ("enforceEager", "enforce_eager")):
        if md.engine.get(key):
            engine[flag] = True
    for key, value in sorted((md.engine.get("args") or {}).items()):
        engine[key.replace("-", "_")] = value
    return {
        "model_loading_config": {
            "model_id": md.served_name or md.model_id,
            "model_source": md.model_id,
        },
        "engine_kwargs": engine,
        "deployment_config": {
            "autoscaling_config": {"min_replicas": replicas, "max_replicas": replicas}
        },
    }


def _workers(
    md: ModelDeployment, group: str, *, image: str, gpus: int, replicas: int, memory: str | None
) -> dict[str, Any]:
    container = {
        "name": "ray-worker",
        "image": image,
        "env": env(md),
        "resources": container_resources(
            gpus=gpus, gpu_type=gpu_type(md), memory=memory or "32Gi", cpu=None
        ),
    }
    return {
        "groupName": group,
        "replicas": replicas,
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "rayStartParams": {},
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": {"containers": [container], **placement(md)},
        },
    }
