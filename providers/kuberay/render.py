"""KubeRay: one ray.io RayService per ModelDeployment, and a PersistentVolumeClaim per volume of
spec.model.storage with a size (mounted on the head and every worker group).

Multi-node: with spec.engine.args pipeline-parallel-size P > 1 one Ray Serve replica runs vLLM
with tensor parallel = spec.resources.gpu.count and pipeline parallel P, across P worker pods of
gpu.count GPUs each (the group has replicas x P pods). Ray Serve LLM (Ray <RAY_VERSION>,
ray/llm/_internal/serve/engines/vllm/vllm_models.py) reserves one bundle of one GPU per vLLM
worker, TP x PP of them (num_devices, :205-207; placement_bundles, :243-255), with PACK by
default (:209-216), which may cross nodes; STRICT_PACK would need all of them on one node and
SPREAD would scatter a tensor-parallel group. The renderer writes that placement out
(placement_group_config: bundle_per_worker {GPU: 1}, strategy PACK; the schema in
ray/llm/_internal/common/placement.py:47-79), so Git says how the replica is placed."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.model.kinds import PIPELINE_PARALLEL, ModelDeployment, dig
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    cache_env,
    claim_volumes,
    container_resources,
    engine_pod_spec,
    env,
    gpu_type,
    managed_claims,
    object_meta,
    pod_labels,
    served_model_name,
)
from core.rendering.podsecurity import NON_ROOT_IMAGE

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
# A replica across nodes: one bundle of one GPU per vLLM worker (Ray expands bundle_per_worker
# to TP x PP bundles: vllm_models.py:219-231), packed onto as few worker pods as hold them.
MULTI_NODE_PLACEMENT = {"bundle_per_worker": {"GPU": 1}, "strategy": "PACK"}
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One RayService (a head, GPU worker groups, a Ray Serve LLM application) and the claims of
    the sized volumes it mounts."""
    image = md.image_override or _RAY_IMAGE.format(version=pins.pin("ray"))
    nodes = md.pipeline_parallel
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
        groups = [
            (f"{role}-workers", _gpus(part), int(part.get("replicas", 1)), part.get("memory"))
            for role, part in parts.items()
        ]
    else:
        replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
        application = {
            "import_path": "ray.serve.llm:build_openai_app",
            "args": {"llm_configs": [_llm_config(md, md.gpu_count, replicas)]},
        }
        groups = [
            ("gpu-workers", md.gpu_count, replicas, md.spec.get("resources", {}).get("memory"))
        ]
    # Each Ray Serve replica spans `nodes` worker pods: the group has replicas x nodes pods.
    workers = [
        _workers(md, group, image=image, gpus=gpus, pods=replicas * nodes, memory=memory)
        for group, gpus, replicas, memory in groups
    ]
    serve = {"applications": [{"name": "llm", "route_prefix": "/", **application}]}
    metadata = object_meta(md, md.name)
    if md.overrides is not None:
        metadata["annotations"][_IGNORED_ANNOTATION] = (
            "spec.provider.overrides is not used by the kuberay provider"
        )
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": metadata,
        # JSON is YAML: a deterministic, sorted serve config without a YAML library in the core.
        "spec": {
            "serveConfigV2": json.dumps(serve, indent=2, sort_keys=True),
            "rayClusterConfig": {"headGroupSpec": _head(md, image), "workerGroupSpecs": workers},
        },
    }
    return [service, *managed_claims(md)]


def _head(md: ModelDeployment, image: str) -> dict[str, Any]:
    """The Ray head: the GCS, the dashboard and Ray Serve's HTTP proxy on 8000."""
    container: dict[str, Any] = {
        "name": "ray-head",
        "image": image,
        "env": env(md, extra=cache_env(md)),
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
    return {
        "rayStartParams": {"dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": _pod_spec(md, container),
        },
    }


def _pod_spec(md: ModelDeployment, container: dict[str, Any]) -> dict[str, Any]:
    """A Ray pod's spec around its one container: the spec's volumes (the model cache, ...)
    mounted on it, and the spec's placement. KubeRay <KUBERAY_VERSION> adds its own /dev/shm and log
    volumes beside them (ray-operator/controllers/ray/common/pod.go:412-421)."""
    volumes, mounts = claim_volumes(md)
    if mounts:
        container["volumeMounts"] = mounts
    spec = engine_pod_spec(md, [container], hardening=NON_ROOT_IMAGE)
    if volumes:
        spec["volumes"] = volumes
    return spec


def _gpus(part: Mapping[str, Any]) -> int:
    return int(dig(part, "gpu", "count") or 0)


def _llm_config(
    md: ModelDeployment, gpus: int, replicas: int, *, kv_transfer: bool = False
) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "tensor_parallel_size": max(gpus, 1),
        "enable_prefix_caching": bool(md.engine.get("enablePrefixCaching", True)),
    }
    if md.pipeline_parallel > 1:
        engine["pipeline_parallel_size"] = md.pipeline_parallel
    if md.engine.get("contextLength"):
        engine["max_model_len"] = int(md.engine["contextLength"])
    for key, flag in (("trustRemoteCode", "trust_remote_code"), ("enforceEager", "enforce_eager")):
        if md.engine.get(key):
            engine[flag] = True
    for key, value in sorted(md.engine_args.items()):
        if key != PIPELINE_PARALLEL:  # written above from the typed rule's value
            name, typed = _engine_kwarg(key, str(value))
            engine[name] = typed
    if kv_transfer and "kv_transfer_config" not in engine:
        engine["kv_transfer_config"] = dict(_KV_TRANSFER)
    config: dict[str, Any] = {
        "model_loading_config": {
            "model_id": served_model_name(md) or md.model_id,
            "model_source": md.model_id,
        },
        "engine_kwargs": engine,
        "deployment_config": {
            "autoscaling_config": {"min_replicas": replicas, "max_replicas": replicas}
        },
    }
    if md.pipeline_parallel > 1:
        config["placement_group_config"] = dict(MULTI_NODE_PLACEMENT)
    return config


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
    md: ModelDeployment, group: str, *, image: str, gpus: int, pods: int, memory: str | None
) -> dict[str, Any]:
    container = {
        "name": "ray-worker",
        "image": image,
        "env": env(md, extra=cache_env(md)),
        "resources": container_resources(
            gpus=gpus, gpu_type=gpu_type(md), memory=memory or "32Gi", cpu=None
        ),
    }
    return {
        "groupName": group,
        "replicas": pods,
        "minReplicas": pods,
        "maxReplicas": pods,
        # The CRD defaults it to 1; written out so that Git holds what the API server stores
        # (Argo CD's diff otherwise sees a field Git lacks, and self-heal re-applies forever).
        "numOfHosts": 1,
        "rayStartParams": {},
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": _pod_spec(md, container),
        },
    }
