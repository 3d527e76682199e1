"""KAITO: one kaito.sh Workspace per ModelDeployment, and for a llama.cpp model its claims and, in
built mode, the image build before it (providers/kaito/build.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import Engine, ModelDeployment, ModelSource, VolumePurpose
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    claim_volumes,
    container_resources,
    deep_merge,
    env,
    gpu_type,
    hf_home_env,
    managed_claims,
    object_meta,
    placement,
    pod_labels,
)
from core.rendering.podsecurity import ROOT_IMAGE, harden
from providers.kaito.aikit import Gguf, facts, gguf, premade, runner_image
from providers.kaito.build import (
    SYNC_WAVE,
    build_objects,
    built_image,
    registry_image,
    wait_for_image,
)
from providers.kaito.overrides import OVERRIDE_ROOTS
from providers.kaito.pods import PORT as KAITO_PORT
from providers.kaito.rules import (
    GgufMode,
    gguf_mode,
    instance_type,
    model_access_secret,
    workspace_selector,
)

# The config a built or pre-made aikit image runs with: aikit's image config passes it to LocalAI
# whenever the aikitfile has one (aikit pkg/aikit2llb/inference/image.go NewImageConfig), and
# args given here replace that command, so Runway passes it again.
CONFIG_FILE = "--config-file=/config.yaml"

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
    source = gguf(md) if md.engine_type == Engine.LLAMACPP else None
    built = source is not None and gguf_mode(md, context) == GgufMode.BUILT
    tag = pins.pin("aikit")
    meta = object_meta(md, md.name)
    before: list[dict[str, Any]] = []
    if built and source is not None:
        meta["annotations"][SYNC_WAVE] = "1"
        before = build_objects(md, source, context, tag)
    workspace: dict[str, Any] = {
        "apiVersion": _API_VERSION,
        "kind": "Workspace",
        "metadata": meta,
        "resource": resource,
        "inference": _inference(md, context, pins, source if built else None),
    }
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    accepted = {k: v for k, v in overrides.items() if k in OVERRIDE_ROOTS}
    claims = managed_claims(md) if md.engine_type == Engine.LLAMACPP else []
    return [*before, deep_merge(workspace, accepted), *claims]


def _inference(
    md: ModelDeployment, context: ProviderContext, pins: Versions, built: Gguf | None
) -> dict[str, Any]:
    if md.engine_type != Engine.LLAMACPP:  # KAITO manages the vLLM image and its flags
        preset: dict[str, Any] = {"name": md.model_id}
        secret = model_access_secret(md, context)
        if secret:  # only presets that download at runtime take it; the key is HF_TOKEN
            preset["presetOptions"] = {"modelAccessSecret": secret}
        return {"preset": preset}
    tag = pins.pin("aikit")
    image, args = _image_and_args(md, context, tag, built)
    resources = md.spec.get("resources") or {}
    volumes, mounts = _volumes(
        md, direct=built is None and md.model_source != ModelSource.CUSTOM, context=context
    )
    container: dict[str, Any] = {
        "name": "model",
        "image": image,
        "args": [*args, f"--address=:{KAITO_PORT}"],
        "ports": [{"containerPort": KAITO_PORT, "protocol": "TCP"}],
        "env": env(md, extra=hf_home_env(md)),
    }
    if mounts:
        container["volumeMounts"] = mounts
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
    spec: dict[str, Any] = {"containers": [container], **placement(md)}
    if built is not None:
        spec["initContainers"] = [wait_for_image(md, built, tag, registry_image(pins))]
    if volumes:
        spec["volumes"] = volumes
    # KAITO copies the template into the pod unchanged: its securityContext is Runway's
    # (providers/kaito/__init__.py POD_SECURITY).
    return {"template": {"metadata": {"labels": pod_labels(md)}, "spec": harden(spec, ROOT_IMAGE)}}


def _image_and_args(
    md: ModelDeployment, context: ProviderContext, tag: str, built: Gguf | None
) -> tuple[str, list[str]]:
    """The image and its arguments before --address: a built image or a pre-made one with its
    LocalAI config; the runner image (or the user's) given the GGUF's URL; any other custom image
    as it is."""
    if built is not None:
        return built_image(md, built, tag), [CONFIG_FILE]
    if md.model_source == ModelSource.CUSTOM:
        image = md.image_override
        return image, [CONFIG_FILE] if premade(image or "", context) is not None else []
    source = gguf(md)
    ref = [source.ref] if source is not None else []
    return md.image_override or runner_image(md, context, tag), ref


def _volumes(
    md: ModelDeployment, *, direct: bool, context: ProviderContext
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The claims of spec.model.storage.volumes at their mount paths; the runner downloads into
    its models directory (aikit runner.go generateLlamaCppDownload: --local-dir /models, curl -o
    /models/<file>), so with the runner the model cache is mounted there too."""
    volumes, mounts = claim_volumes(md)
    models_dir = str((facts(context).get("runner") or {}).get("modelsDir") or "/models")
    cache = next((v for v in md.volumes if v.get("purpose") == VolumePurpose.MODEL_CACHE), None)
    if direct and cache is not None and cache.get("mountPath") != models_dir:
        mounts.append({"name": cache["name"], "mountPath": models_dir})
    return volumes, mounts
