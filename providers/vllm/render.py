"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server; a replica across
nodes (pipeline-parallel-size > 1) is a LeaderWorkerSet group instead
(core/rendering/leaderworkerset.py)."""

from __future__ import annotations

from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import managed_claims
from core.rendering.engines import vllm_deployment
from core.rendering.leaderworkerset import is_multinode, leaderworkerset_and_service


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """Deployment (primary) and Service, or LeaderWorkerSet (primary) and the Service of its
    leaders, from spec.engine.image or the pinned vLLM image, and a PersistentVolumeClaim per
    volume with a size."""
    memory = md.spec.get("resources", {}).get("memory")
    replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
    build = leaderworkerset_and_service if is_multinode(md) else _deployment
    return build(md, md.name, pins, gpus=md.gpu_count, memory=memory, replicas=replicas) + (
        managed_claims(md)
    )


def _deployment(
    md: ModelDeployment, name: str, pins: Versions, *, gpus: int, memory: str | None, replicas: int
) -> list[dict[str, Any]]:
    return vllm_deployment(md, name, pins, gpus=gpus, memory=memory, replicas=replicas, host=True)
