"""KubeRay's own admission rules: what the RayService cannot carry the way the spec asks."""

from __future__ import annotations

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext, Rules

EXTRA_ARGS = FieldPath.root("spec", "engine", "extraArgs")
VOLUMES = FieldPath.root("spec", "model", "storage", "volumes")
NO_COMMAND_LINE = (
    "Ray Serve LLM starts vLLM from engine_kwargs, not a command line (the pinned Ray's "
    "ray/llm/_internal/serve/engines/vllm/vllm_models.py:146-191), so these would be dropped: "
    "set them in spec.engine.args, which become engine_kwargs"
)
ONE_POD = (
    "KubeRay mounts the volume on the Ray head and on every worker pod, at least two pods, and "
    "ReadWriteOncePod lets only one pod mount it: the others would never start; use "
    "ReadWriteMany (the default)"
)
ONE_NODE = (
    "{at}: ReadWriteOnce lets the pods of one node only mount it, and KubeRay mounts it on the "
    "Ray head and on every worker pod (workers of one replica span nodes when "
    "pipeline-parallel-size > 1): a pod scheduled elsewhere waits on a Multi-Attach error"
)


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """spec.engine.extraArgs is refused (nothing would pass them); a claim Runway creates for
    the head and the workers may not be ReadWriteOncePod, and ReadWriteOnce is warned about."""
    errors: list[FieldError] = []
    warnings: list[str] = []
    if md.engine.get("extraArgs"):
        errors.append(FieldError(str(EXTRA_ARGS), Reason.FORBIDDEN, NO_COMMAND_LINE))
    for i, volume in enumerate(md.volumes):
        at = VOLUMES.index(i).child("accessMode")
        mode = volume.get("accessMode") if volume.get("size") is not None else None
        if mode == "ReadWriteOncePod":
            errors.append(FieldError(str(at), Reason.FORBIDDEN, ONE_POD))
        elif mode == "ReadWriteOnce":
            warnings.append(ONE_NODE.format(at=at))
    return errors, warnings


RULES = Rules(admission_checks)
