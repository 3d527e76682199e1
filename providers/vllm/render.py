"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server."""

from __future__ import annotations

from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    HTTP_PORT,
    cache_env,
    container_resources,
    deployment_and_service,
    env,
    gpu_type,
    http_port,
    managed_claims,
    pod_volumes,
    spec_overrides,
    vllm_args,
)


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """Deployment (primary) and Service, from spec.engine.image or the pinned vLLM image, and a
    PersistentVolumeClaim per volume with a size."""
    gpus = md.gpu_count
    volumes, mounts = pod_volumes(md, gpus=gpus)
    probe = {"httpGet": {"path": "/health", "port": "http"}}
    container: dict[str, Any] = {
        "name": "vllm",
        "image": md.image_override or f"vllm/vllm-openai:{pins.vllm}",
        "args": [
            "--host",
            "0.0.0.0",
            "--port",
            str(HTTP_PORT),
            *vllm_args(md, gpus=gpus, skip=frozenset({"host", "port"})),
        ],
        "ports": http_port(),
        "resources": container_resources(
            gpus=gpus,
            gpu_type=gpu_type(md),
            memory=md.spec.get("resources", {}).get("memory"),
            cpu=md.spec.get("resources", {}).get("cpu"),
        ),
        "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 60},
        "livenessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
    }
    variables = env(md, extra=cache_env(md))
    if variables:  # an empty list is dropped by the API server (omitempty): no drift
        container["env"] = variables
    if mounts:
        container["volumeMounts"] = mounts
    replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
    objects = deployment_and_service(
        md,
        md.name,
        container,
        replicas=replicas,
        volumes=volumes,
        spec_overrides=spec_overrides(md),
    )
    return objects + managed_claims(md)
