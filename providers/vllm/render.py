"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server."""

from __future__ import annotations

from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    deployment_and_service,
    managed_claims,
    pod_volumes,
    spec_overrides,
)
from core.rendering.engines import vllm_container


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """Deployment (primary) and Service, from spec.engine.image or the pinned vLLM image, and a
    PersistentVolumeClaim per volume with a size."""
    gpus = md.gpu_count
    volumes, mounts = pod_volumes(md, gpus=gpus)
    memory = md.spec.get("resources", {}).get("memory")
    container = vllm_container(md, pins, gpus=gpus, memory=memory, mounts=mounts, host=True)
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
