"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server."""

from __future__ import annotations

from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import managed_claims
from core.rendering.engines import vllm_deployment


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """Deployment (primary) and Service, from spec.engine.image or the pinned vLLM image, and a
    PersistentVolumeClaim per volume with a size."""
    memory = md.spec.get("resources", {}).get("memory")
    replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
    objects = vllm_deployment(
        md, md.name, pins, gpus=md.gpu_count, memory=memory, replicas=replicas, host=True
    )
    return objects + managed_claims(md)
