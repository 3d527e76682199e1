"""KAITO: one kaito.sh Workspace per ModelDeployment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError, Reason, shown
from core.model.kinds import Engine, ModelDeployment, ModelSource, dig
from core.model.versions import Versions
from core.rendering.common import (
    container_resources,
    deep_merge,
    env,
    gpu_type,
    object_meta,
    placement,
    pod_labels,
)
from providers.kaito.overrides import OVERRIDE_ROOTS
from providers.kaito.pods import PORT as KAITO_PORT

_API_VERSION = "kaito.sh/v1beta1"
_GGUF = ".gguf"


def render(md: ModelDeployment, pins: Versions) -> list[dict[str, Any]]:
    """One Workspace: `resource` and `inference` at the object root, overrides merged there."""
    match = {"kubernetes.io/os": "linux", **dict(md.spec.get("nodeSelector") or {})}
    if md.gpu_count > 0:
        match["nvidia.com/gpu.present"] = "true"
    workspace: dict[str, Any] = {
        "apiVersion": _API_VERSION,
        "kind": "Workspace",
        "metadata": object_meta(md, md.name),
        "resource": {
            "count": max(int(md.spec.get("scaling", {}).get("replicas", 1)), 1),
            "labelSelector": {"matchLabels": match},
        },
        "inference": _inference(md),
    }
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    accepted = {k: v for k, v in overrides.items() if k in OVERRIDE_ROOTS}
    return [deep_merge(workspace, accepted)]


def _inference(md: ModelDeployment) -> dict[str, Any]:
    if md.engine_type != Engine.LLAMACPP:  # KAITO manages the vLLM image and its flags
        preset: dict[str, Any] = {"name": md.model_id}
        secret = dig(md.spec, "secrets", "huggingFaceToken")
        if secret:  # KAITO's webhook refuses a gated preset without it; the key is HF_TOKEN
            preset["presetOptions"] = {"modelAccessSecret": str(secret)}
        return {"preset": preset}
    args = (
        []
        if md.model_source == ModelSource.CUSTOM
        else [str((md.engine.get("args") or {}).get("ggufUrl") or f"huggingface://{md.model_id}")]
    )
    resources = md.spec.get("resources") or {}
    container: dict[str, Any] = {
        "name": "model",
        "image": md.image_override,
        "args": [*args, f"--address=:{KAITO_PORT}"],
        "ports": [{"containerPort": KAITO_PORT, "protocol": "TCP"}],
        "env": env(md),
    }
    if md.gpu_count > 0:  # KAITO copies the template unchanged: the GPU must be asked for here
        container["resources"] = container_resources(
            gpus=md.gpu_count,
            gpu_type=gpu_type(md),
            memory=resources.get("memory"),
            cpu=resources.get("cpu"),
        )
    else:
        requests = {k: str(resources[k]) for k in ("cpu", "memory") if resources.get(k)}
        if requests:
            container["resources"] = {"requests": requests}
    return {
        "template": {
            "metadata": {"labels": pod_labels(md)},
            "spec": {"containers": [container], **placement(md)},
        }
    }


# KAITO's own admission rules (issue #20's KAITO rows), at the pin (KAITO v0.10.0):
# - api/v1beta1/workspace_types.go:54-102: a preset Workspace carries only `preset.name` and
#   `presetOptions` (plus a ConfigMap name in `inference.config`); no field takes engine flags
#   or a context length, so spec.engine.args, extraArgs and contextLength reach no vLLM process.
# - Runway's llama.cpp template (_inference above) runs the user's LocalAI image with one model
#   argument, `huggingface://<model.id>`: LocalAI loads a file, so a model.id naming only a
#   repository (bartowski/Llama-3.2-1B-Instruct-GGUF) gives it nothing to load.


def admission_checks(md: ModelDeployment) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings): a llama.cpp model.id must name a .gguf file unless
    engine.args.ggufUrl is given; engine settings a vLLM preset drops are warned about."""
    errors: list[FieldError] = []
    warnings: list[str] = []
    args = md.engine.get("args") or {}
    if md.engine_type == Engine.LLAMACPP:
        if (
            md.model_source == ModelSource.HUGGINGFACE
            and not args.get("ggufUrl")
            and md.model_id
            and not md.model_id.lower().endswith(_GGUF)
        ):
            detail = (
                f"kaito's llama.cpp template loads one GGUF file (huggingface://<repo>/<file>.gguf)"
                f" and {shown(md.model_id)!r} names no .gguf file: give the file's path in the repository"
                " or set spec.engine.args.ggufUrl"
            )
            errors.append(FieldError("spec.model.id", Reason.INVALID, detail))
        return errors, warnings
    dropped = [
        f"spec.engine.{key}"
        for key in ("args", "extraArgs", "contextLength")
        if md.engine.get(key) not in (None, {}, [])
    ]
    warnings.extend(
        f"{field} is ignored by kaito: a preset Workspace has no field for engine settings"
        " (KAITO v0.10.0 api/v1beta1/workspace_types.go:54-102)"
        for field in dropped
    )
    return errors, warnings
