"""KubeRay: one ray.io RayService per ModelDeployment."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    container_resources,
    env,
    gpu_type,
    object_meta,
    placement,
    pod_labels,
    served_model_name,
)

_RAY_IMAGE = "rayproject/ray-llm:{version}-py311-cu128"
_IGNORED_ANNOTATION = "airunway.ai/overrides-ignored"
# Ray's P/D builder (ray.serve.llm:build_pd_openai_app, PDServingArgs) refuses a prefill or
# decode config without engine_kwargs.kv_transfer_config. NIXL is the connector Ray documents for
# P/D and ships in the ray-llm image; kv_both is the role Ray documents for both sides.
_KV_TRANSFER = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
# Ray hands engine_kwargs to vLLM's engine arguments as Python values, so spec.engine.args
# strings are typed the way vLLM's parser would type them: a bare flag is True, `no-X` is X
# False, numbers are numbers, JSON objects and lists are parsed. These vLLM flags are typed str
# (vLLM's argument definitions at VLLM_VERSION) although their values may look like numbers.
_STRING_FLAGS = frozenset(
    {
        "code_revision",
        "fingerprint_value",
        "revision",
        "show_hidden_metrics_for_version",
        "tokenizer_revision",
    }
)
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One RayService: a head, GPU worker groups, and a Ray Serve LLM application."""
    image = md.image_override or _RAY_IMAGE.format(version=pins.pin("ray"))
    if md.is_disaggregated:
        parts = {role: dig(md.spec, "scaling", role) or {} for role in ("prefill", "decode")}
        application = {
            "import_path": "ray.serve.llm:build_pd_openai_app",
            "args": {
                f"{role}_config": _llm_config(
                    md, _gpus(part), int(part.get("replicas", 1)), kv_transfer=True
                )
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


def _llm_config(
    md: ModelDeployment, gpus: int, replicas: int, *, kv_transfer: bool = False
) -> dict[str, Any]:
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
        name, typed = _engine_kwarg(key, str(value))
        engine[name] = typed
    if kv_transfer and "kv_transfer_config" not in engine:
        engine["kv_transfer_config"] = dict(_KV_TRANSFER)
    return {
        "model_loading_config": {
            "model_id": served_model_name(md) or md.model_id,
            "model_source": md.model_id,
        },
        "engine_kwargs": engine,
        "deployment_config": {
            "autoscaling_config": {"min_replicas": replicas, "max_replicas": replicas}
        },
    }


def _engine_kwarg(key: str, value: str) -> tuple[str, Any]:
    """(engine_kwargs name, typed value) for one spec.engine.args entry."""
    name = key.replace("-", "_")
    if value == "":  # a bare flag: --enforce-eager, or --no-enable-prefix-caching
        return (name[3:], False) if name.startswith("no_") else (name, True)
    if name in _STRING_FLAGS:
        return name, value
    if value.lower() in ("true", "false"):
        return name, value.lower() == "true"
    if _INT.match(value):
        return name, int(value)
    if _FLOAT.match(value):
        return name, float(value)
    if value[:1] in ("{", "["):
        try:
            return name, json.loads(value)
        except ValueError:
            return name, value
    return name, value


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
        # The CRD defaults it to 1; written out so that Git holds what the API server stores
        # (Argo CD's diff otherwise sees a field Git lacks, and self-heal re-applies forever).
        "numOfHosts": 1,
        "rayStartParams": {},
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": {"containers": [container], **placement(md)},
        },
    }
