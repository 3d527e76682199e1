"""KAITO's own admission rules at the pin, answered as its webhook would, from two inputs:

* the facts (providers/kaito/facts/presets.json, `make kaito-facts` from KAITO's sources at
  KAITO_VERSION): the presets, how KAITO resolves a model name to one, the name each serves
  under, which download their weights at runtime, and the instance types node
  auto-provisioning knows per cloud;
* how the target KAITO is installed, set once by the platform team as annotations on the
  `kaito` InferenceProviderConfig (SETTINGS below; absent means KAITO's chart default).

Line numbers are those of KAITO's api/v1beta1/workspace_validation.go at KAITO_VERSION unless said
otherwise; messages name that version as the facts record it (`kaito`, the tag they were read at).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from core.fields.errors import FieldError, Reason, shown
from core.model.kinds import Engine, ModelDeployment, ModelSource, dig
from core.model.plugin import ProviderContext, Rules
from core.schema.suggest import close_matches
from providers.kaito import aikit

PREFIX = "kaito.airunway.ai/"
NAP = PREFIX + "node-auto-provisioning"  # "true" | "false"
CLOUD = PREFIX + "cloud-provider"  # azure | aws | arc: the chart's cloudProviderName
INSTANCE_TYPE = PREFIX + "instance-type"  # for Workspaces that request GPUs
CPU_INSTANCE_TYPE = PREFIX + "cpu-instance-type"  # for llama.cpp Workspaces without GPUs
# How a Hugging Face GGUF runs: "direct" (the default: aikit's runner image downloads it when the
# pod starts) or "built" (an image built in the cluster, providers/kaito/build.py). Set on the kaito
# InferenceProviderConfig for every model, or on one ModelDeployment's metadata.annotations.
GGUF_MODE = PREFIX + "gguf-mode"
SETTINGS = (NAP, CLOUD, INSTANCE_TYPE, CPU_INSTANCE_TYPE, GGUF_MODE)
INSTANCE_TYPE_AT = "spec.provider.overrides.resource.instanceType"
PROVIDER_AT = "spec.provider.name"
STORAGE_AT = "spec.model.storage.volumes"


class GgufMode(StrEnum):
    DIRECT = "direct"
    BUILT = "built"


def gguf_mode(md: ModelDeployment, context: ProviderContext) -> GgufMode | None:
    """The model's annotation, else the config's, else direct; None when the one that applies
    is neither."""
    given = md.annotations.get(GGUF_MODE) or context.settings.get(GGUF_MODE) or GgufMode.DIRECT
    return GgufMode(given) if given in tuple(GgufMode) else None


@dataclass(frozen=True, slots=True)
class Install:
    """How the target KAITO runs: node auto-provisioning on or off, on which cloud, and the
    instance types Workspaces get when nothing per model says otherwise."""

    auto_provisioning: bool
    cloud: str
    gpu_instance_type: str
    cpu_instance_type: str


@dataclass(frozen=True, slots=True)
class Preset:
    """A preset as KAITO resolves a model name (vllm_model.go GetModelByName)."""

    name: str  # the name KAITO looks up: lower-cased, redirects applied
    served: str  # --served-model-name (pkg/model/interface.go buildVLLMInferenceCommand)
    download_at_runtime: bool
    auth_required: bool
    generated: bool  # built from the Hugging Face repository (presets/workspace/generator)


def _facts(context: ProviderContext) -> Mapping[str, Any]:
    return context.fact("presets")


def kaito_at(context: ProviderContext) -> str:
    """'KAITO <tag>': the KAITO release the facts were read at, as messages cite it."""
    tag = _facts(context).get("kaito")
    return f"KAITO {tag}" if tag else "KAITO at KAITO_VERSION"


def install(context: ProviderContext) -> tuple[Install, list[FieldError]]:
    """The install the `kaito` config's annotations describe, and what is wrong with them."""
    facts = _facts(context)
    defaults = facts.get("install") or {}
    settings = context.settings
    errors: list[FieldError] = []
    where = f"InferenceProviderConfig {context.name or 'kaito'} metadata.annotations[{{}}]"
    nap_text = settings.get(NAP)
    nap = bool(defaults.get("nodeAutoProvisioning", True))
    if nap_text is not None:
        if nap_text not in ("true", "false"):
            detail = f"{where.format(NAP)} must be true or false, not {shown(nap_text)!r}"
            errors.append(FieldError(PROVIDER_AT, Reason.INVALID, detail))
        nap = nap_text != "false"
    cloud = settings.get(CLOUD) or str(defaults.get("cloudProvider") or "azure")
    clouds = sorted(facts.get("instanceTypes") or ())
    if clouds and cloud not in clouds:
        detail = f"{where.format(CLOUD)} must be one of {', '.join(clouds)}, not {shown(cloud)!r}"
        errors.append(FieldError(PROVIDER_AT, Reason.INVALID, detail))
    return (
        Install(nap, cloud, settings.get(INSTANCE_TYPE, ""), settings.get(CPU_INSTANCE_TYPE, "")),
        errors,
    )


def resolve_preset(model_id: str, context: ProviderContext) -> Preset | None:
    """The preset KAITO runs for preset name `model_id`, or None when KAITO knows no such
    preset (a name without '/' that no preset registers)."""
    facts = _facts(context)
    name = model_id.lower()
    name = str((facts.get("redirects") or {}).get(name, name))
    presets = facts.get("presets") or {}
    builtin = presets.get(name)
    if builtin is None and "/" in name:
        mapped = (facts.get("huggingFaceIds") or {}).get(name)
        builtin = presets.get(mapped) if mapped else None
        if mapped and builtin is not None:
            name = str(mapped)
    if builtin is not None:
        return Preset(
            name,
            str(builtin["servedName"]),
            bool(builtin["downloadAtRuntime"]),
            bool(builtin["downloadAuthRequired"]),
            False,
        )
    if "/" in name:
        parts = name.split("/")
        if all(parts[:2]) and len(parts) >= 2:
            return Preset(name, parts[-1], True, False, True)
    return None


def served_as(md: ModelDeployment, context: ProviderContext) -> str | None:
    """The name KAITO's pods answer to: the preset's (vLLM), or for llama.cpp the pre-made
    image's (aikit's catalog) or the GGUF file's without .gguf (providers/kaito/aikit.py)."""
    if md.engine_type == Engine.LLAMACPP:
        return aikit.served_as(md, context)
    preset = resolve_preset(md.model_id, context) if md.model_id else None
    return preset.served if preset is not None else None


def model_access_secret(md: ModelDeployment, context: ProviderContext) -> str | None:
    """The Secret given as presetOptions.modelAccessSecret: the HF token's, only for presets
    that download their weights at runtime (workspace_validation.go:637-638 refuses it for the others)."""
    secret = dig(md.spec, "secrets", "huggingFaceToken")
    if not secret:
        return None
    preset = resolve_preset(md.model_id, context) if md.model_id else None
    if preset is not None and not preset.download_at_runtime:
        return None
    return str(secret)


def instance_type(md: ModelDeployment, context: ProviderContext) -> str | None:
    """resource.instanceType: the model's override, else the config's instance type for its
    kind of node, while auto-provisioning is on; never while it is off (workspace_validation.go:141-145)."""
    settings, _ = install(context)
    override = dig(md.overrides if isinstance(md.overrides, Mapping) else {}, "resource")
    given = override.get("instanceType") if isinstance(override, Mapping) else None
    if not settings.auto_provisioning:
        return None
    if isinstance(given, str) and given:
        return given
    default = settings.gpu_instance_type if md.gpu_count > 0 else settings.cpu_instance_type
    return default or None


def check(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings): what KAITO's webhook would refuse in the Workspace Runway renders for
    `md`, at the ModelDeployment field that causes it."""
    settings, errors = install(context)
    warnings: list[str] = []
    errors += _instance_type_errors(md, context, settings)
    errors += _replicas(md, context)
    if md.engine_type != Engine.LLAMACPP and md.model_id:  # no id: the core says so
        preset_errors, preset_warnings = _preset_checks(md, context, settings)
        errors += preset_errors
        warnings += preset_warnings
    errors += _served_name(md, context)
    if old is not None:
        errors += _immutable(md, old, context)
    return errors, warnings


def _instance_type_errors(
    md: ModelDeployment, context: ProviderContext, settings: Install
) -> list[FieldError]:
    override = dig(md.overrides if isinstance(md.overrides, Mapping) else {}, "resource")
    given = override.get("instanceType") if isinstance(override, Mapping) else None
    if not settings.auto_provisioning:
        if given:
            detail = (
                "must be empty: the target KAITO runs without node auto-provisioning "
                f"({NAP}: false on the kaito InferenceProviderConfig), and KAITO then refuses "
                f"any instanceType ({kaito_at(context)} workspace_validation.go:141-145)"
            )
            return [FieldError(INSTANCE_TYPE_AT, Reason.FORBIDDEN, detail)]
        return []
    chosen = instance_type(md, context)
    annotation = INSTANCE_TYPE if md.gpu_count > 0 else CPU_INSTANCE_TYPE
    if chosen is None:
        detail = (
            "KAITO with node auto-provisioning (its default) requires resource.instanceType "
            f"({kaito_at(context)} workspace_validation.go:146-150): set it here, or once for every "
            f"model as the annotation {annotation} on the kaito InferenceProviderConfig (or set "
            f'{NAP}: "false" there when KAITO runs on your own nodes)'
        )
        return [FieldError(INSTANCE_TYPE_AT, Reason.REQUIRED, detail)]
    known = (_facts(context).get("instanceTypes") or {}).get(settings.cloud) or {}
    prefixes = tuple(_facts(context).get("azureSeriesPrefixes") or ())
    if chosen in known or (settings.cloud == "azure" and chosen.startswith(prefixes)):
        return []
    near = close_matches(chosen, known, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    at = INSTANCE_TYPE_AT if given else PROVIDER_AT
    source = "" if given else f" (annotation {annotation} on the kaito InferenceProviderConfig)"
    detail = (
        f"instance type {shown(chosen)!r}{source} is not one {kaito_at(context)} provisions on "
        f"{settings.cloud} (pkg/sku; workspace_validation.go:483-489){hint}"
    )
    return [FieldError(at, Reason.INVALID, detail)]


def _replicas(md: ModelDeployment, context: ProviderContext) -> list[FieldError]:
    replicas = dig(md.spec, "scaling", "replicas")
    if replicas is None or replicas == 1:
        return []
    detail = (
        "must be 1 for kaito: a Workspace runs one inference instance, and its resource.count "
        "is the number of GPU nodes that instance spans, not a replica count, and cannot "
        f"change once created ({kaito_at(context)} api/v1beta1/workspace_types.go:28, "
        "workspace_validation.go:551-553); run more instances as more ModelDeployments"
    )
    return [FieldError("spec.scaling.replicas", Reason.INVALID, detail)]


def _preset_checks(
    md: ModelDeployment, context: ProviderContext, settings: Install
) -> tuple[list[FieldError], list[str]]:
    errors: list[FieldError] = []
    warnings: list[str] = []
    facts = _facts(context)
    name = md.model_id.lower()
    if name in (facts.get("deprecated") or ()):
        detail = f"{kaito_at(context)} no longer supports the deprecated preset {shown(name)!r} (workspace_validation.go:399)"
        return [FieldError("spec.model.id", Reason.INVALID, detail)], []
    preset = resolve_preset(md.model_id, context)
    if preset is None:
        near = close_matches(name, facts.get("presets") or (), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        detail = (
            f"{shown(md.model_id)!r} is no {kaito_at(context)} preset and no Hugging Face id "
            f"(<org>/<repo>), so KAITO refuses it (workspace_validation.go:603-605){hint}"
        )
        return [FieldError("spec.model.id", Reason.INVALID, detail)], []
    secret = dig(md.spec, "secrets", "huggingFaceToken")
    if preset.auth_required and not secret:
        detail = (
            f"KAITO preset {preset.name} downloads gated weights and refuses a Workspace "
            "without a modelAccessSecret (workspace_validation.go:634-635): name the Secret holding HF_TOKEN"
        )
        errors.append(FieldError("spec.secrets.huggingFaceToken", Reason.REQUIRED, detail))
    if secret and not preset.download_at_runtime:
        warnings.append(
            f"spec.secrets.huggingFaceToken is not passed to kaito: preset {preset.name} ships "
            "its weights in its image, and KAITO refuses a modelAccessSecret for it "
            f"({kaito_at(context)} workspace_validation.go:637-638)"
        )
    if md.served_name and md.served_name != preset.served:
        warnings.append(
            f"spec.model.servedName is not passed to kaito: preset {preset.name} serves under "
            f"{preset.served!r} ({kaito_at(context)} pkg/model/interface.go:334)"
        )
    if not settings.auto_provisioning and md.gpu_count > 0:
        selector = md.spec.get("nodeSelector") or {}
        if "nvidia.com/gpu.product" not in selector:
            warnings.append(
                "kaito without node auto-provisioning refuses a preset Workspace whose "
                f"matching nodes mix GPU products, counts or memory ({kaito_at(context)} "
                "workspace_validation.go:454-462): set spec.nodeSelector "
                "nvidia.com/gpu.product to the one product the model runs on"
            )
    return errors, warnings


def _served_name(md: ModelDeployment, context: ProviderContext) -> list[FieldError]:
    """A gateway.modelName other than the name the pods answer to: the route would take
    requests the engine refuses ("model does not exist")."""
    wanted = dig(md.spec, "gateway", "modelName")
    served = served_as(md, context)
    if dig(md.spec, "gateway", "enabled") is not True or not wanted or served is None:
        return []
    if wanted == served:
        return []
    detail = (
        f"kaito's pods answer only to {served!r} (the name KAITO or LocalAI serves the model "
        "under; Runway cannot rename it), so a route on another name reaches nothing: "
        f"remove spec.gateway.modelName or set it to {served!r}"
    )
    return [FieldError("spec.gateway.modelName", Reason.INVALID, detail)]


def workspace_selector(md: ModelDeployment) -> dict[str, str]:
    """resource.labelSelector.matchLabels of the Workspace rendered for `md`."""
    match = {
        "kubernetes.io/os": "linux",
        **{str(k): str(v) for k, v in dict(md.spec.get("nodeSelector") or {}).items()},
    }
    if md.gpu_count > 0:
        match["nvidia.com/gpu.present"] = "true"
    return match


def _immutable(
    md: ModelDeployment, old: ModelDeployment, context: ProviderContext
) -> list[FieldError]:
    """What KAITO refuses to change in a Workspace (validateUpdate), at the field that would."""
    errors = []
    why = (
        f"KAITO refuses to change it in an existing Workspace ({kaito_at(context)} "
        "workspace_validation.go:{}); delete and recreate the ModelDeployment to change it"
    )
    if workspace_selector(md) != workspace_selector(old):
        at = (
            "spec.resources.gpu.count"
            if (md.gpu_count > 0) != (old.gpu_count > 0)
            else "spec.nodeSelector"
        )
        errors.append(
            FieldError(
                at, Reason.IMMUTABLE, "changes resource.labelSelector: " + why.format("580-584")
            )
        )
    if md.engine_type != Engine.LLAMACPP and model_access_secret(
        md, context
    ) != model_access_secret(old, context):
        errors.append(
            FieldError(
                "spec.secrets.huggingFaceToken",
                Reason.IMMUTABLE,
                "changes inference.preset.presetOptions: " + why.format("660-661"),
            )
        )
    before, after = instance_type(old, context), instance_type(md, context)
    if before and after and before != after:
        errors.append(
            FieldError(
                INSTANCE_TYPE_AT,
                Reason.IMMUTABLE,
                f"changes resource.instanceType from {before!r}: " + why.format("573-574"),
            )
        )
    return errors


def llamacpp_errors(
    md: ModelDeployment, context: ProviderContext
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) of a llama.cpp model: the GGUF it names, the build mode, the image."""
    errors = aikit.gguf_errors(md, context)
    if md.model_source != ModelSource.CUSTOM and gguf_mode(md, context) is None:
        where = (
            GGUF_MODE
            if GGUF_MODE in md.annotations
            else f"kaito InferenceProviderConfig {GGUF_MODE}"
        )
        detail = f"{where} must be {' or '.join(GgufMode)}"
        at = f"metadata.annotations[{GGUF_MODE}]" if GGUF_MODE in md.annotations else PROVIDER_AT
        errors.append(FieldError(at, Reason.INVALID, detail))
    image_errors, warnings = aikit.image_checks(md, context)
    if (
        gguf_mode(md, context) == GgufMode.BUILT
        and md.image_override
        and md.model_source != ModelSource.CUSTOM
    ):
        warnings.append(
            "spec.engine.image is not used: in built mode the Workspace runs the image built "
            "from the GGUF in the cluster"
        )
    if md.model_source != ModelSource.CUSTOM and dig(md.spec, "secrets", "huggingFaceToken"):
        warnings.append(
            "spec.secrets.huggingFaceToken does not reach the GGUF download: "
            f"{aikit.aikit_at(context)}'s runner fetches an https URL with curl and no token "
            "(pkg/aikit2llb/inference/runner.go generateLlamaCppDownload), and the build fetches "
            "it as a BuildKit HTTP source without one (download.go handleHTTP): a gated file "
            "cannot be downloaded"
        )
    return errors + image_errors + _storage_errors(md, context), warnings


def _storage_errors(md: ModelDeployment, context: ProviderContext) -> list[FieldError]:
    """A claim mounted where an aikit image keeps its model hides it: pre-made and built images
    hold their GGUF in /models (aikit pkg/aikit2llb/inference/download.go handleHTTP)."""
    models_dir = str((aikit.facts(context).get("runner") or {}).get("modelsDir") or "/models")
    own_model = md.model_source == ModelSource.CUSTOM or gguf_mode(md, context) == GgufMode.BUILT
    if not own_model:
        return []
    return [
        FieldError(
            f"{STORAGE_AT}[{i}].mountPath",
            Reason.INVALID,
            f"{models_dir} holds the model of the aikit image this Workspace runs ({aikit.aikit_at(context)} "
            "pkg/aikit2llb/inference/download.go handleHTTP): a claim mounted there hides it; "
            "mount it elsewhere",
        )
        for i, volume in enumerate(md.volumes)
        if str(volume.get("mountPath") or "").rstrip("/") == models_dir
    ]


def _preset_storage(md: ModelDeployment, context: ProviderContext) -> list[FieldError]:
    """A preset Workspace has no field for a volume: KAITO's InferenceSpec takes a preset, a
    template, a config and adapters only, and KAITO builds the preset's pods itself."""
    if not md.volumes:
        return []
    detail = (
        f"kaito cannot mount a claim into a preset Workspace: {kaito_at(context)} "
        "api/v1beta1/workspace_types.go:87-106 (InferenceSpec) gives a preset only its name, "
        "presetOptions, a config ConfigMap and adapters, and KAITO builds the preset's pods "
        "itself (pkg/workspace/inference); use engine llamacpp (a template Workspace mounts it) "
        "or another provider for the model cache"
    )
    return [FieldError(STORAGE_AT, Reason.FORBIDDEN, detail)]


# Two of Runway's own rules at the pin
# (KAITO at KAITO_VERSION): api/v1beta1/workspace_types.go:54-102 gives a preset Workspace only
# `preset.name` and `presetOptions` (plus a ConfigMap name in `inference.config`), so
# spec.engine.args, extraArgs and contextLength reach no vLLM process; and the llama.cpp
# template (render.py _inference) runs LocalAI on one GGUF file, which a model.id must name.


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings): KAITO's webhook's answer for the Workspace rendered from `md`, a
    llama.cpp model.id that names no .gguf file, and engine settings a preset drops."""
    errors, warnings = check(md, context, old)
    if md.engine_type == Engine.LLAMACPP:
        more, cautions = llamacpp_errors(md, context)
        return errors + more, warnings + cautions
    errors += _preset_storage(md, context)
    dropped = [
        f"spec.engine.{key}"
        for key in ("args", "extraArgs", "contextLength")
        if md.engine.get(key) not in (None, {}, [])
    ]
    warnings.extend(
        f"{field} is ignored by kaito: a preset Workspace has no field for engine settings"
        f" ({kaito_at(context)} api/v1beta1/workspace_types.go:54-102)"
        for field in dropped
    )
    return errors, warnings


RULES = Rules(admission_checks, served_as)
