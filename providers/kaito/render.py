"""KAITO: one kaito.sh Workspace per ModelDeployment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import Engine, ModelDeployment, ModelSource
from core.model.plugin import ProviderContext
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
from providers.kaito.rules import instance_type, model_access_secret, workspace_selector

_API_VERSION = "kaito.sh/v1beta1"


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One Workspace: `resource` and `inference` at the object root, overrides merged there.
    resource.count is 1, written out: a Workspace runs one inference instance and count is the
    GPU nodes it spans (admission refuses other replica counts); resource.instanceType is set
    while the target KAITO auto-provisions nodes (providers/kaito/rules.py)."""
    resource: dict[str, Any] = {"count": 1}
    chosen = instance_type(md, context)
    if chosen:
        resource["instanceType"] = chosen
    resource["labelSelector"] = {"matchLabels": workspace_selector(md)}
    workspace: dict[str, Any] = {
        "apiVersion": _API_VERSION,
        "kind": "Workspace",
        "metadata": object_meta(md, md.name),
        "resource": resource,
        "inference": _inference(md, context),
    }
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    accepted = {k: v for k, v in overrides.items() if k in OVERRIDE_ROOTS}
    return [deep_merge(workspace, accepted)]


def _inference(md: ModelDeployment, context: ProviderContext) -> dict[str, Any]:
    if md.engine_type != Engine.LLAMACPP:  # KAITO manages the vLLM image and its flags
        preset: dict[str, Any] = {"name": md.model_id}
        secret = model_access_secret(md, context)
        if secret:  # only presets that download at runtime take it; the key is HF_TOKEN
            preset["presetOptions"] = {"modelAccessSecret": secret}
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
