"""Validation of a hydrated ModelDeployment: what the validating webhook enforces.

Every check returns FieldErrors and the checks keep going, so a denial lists every problem at
once, in this order: structure, images and args, model, overrides (layers 1 and 2), provider
compatibility, disaggregated serving, storage, ceilings, secrets, served names, name, then update immutability.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from core.checks.flags import ARG_KEY, check_engine_flags
from core.checks.gateway import check_gateway_refs
from core.checks.immutability import check_immutable
from core.checks.overrides import check_global, without_blocked
from core.checks.parallel import check_pipeline_parallel
from core.checks.references import check_secret_fields
from core.checks.storage import check_volumes
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment, ModelSource, VolumePurpose, dig
from core.model.names import check_model_deployment_annotations, check_model_deployment_names
from core.model.plugin import Provider
from core.model.quantity import format_limit, parse_quantity, quantity_problem
from core.model.servednames import check_served_names
from core.rendering.inferencegateway import capabilities_of
from core.selection.compatibility import Fit, compatibility
from core.selection.configs import ProviderRegistry

MAX_GPUS = 64
MAX_REPLICAS = 32
MAX_CPU = Decimal(512)
MAX_MEMORY = Decimal(4) * 2**40
OVERRIDES = FieldPath.root("spec", "provider", "overrides")


class Operation(StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"


@dataclass(frozen=True, slots=True)
class SpecChecks:
    """What check_spec finds whatever the operation and the stored object: a function of the
    hydrated object and the registry only. Kept with the verdict, so that the same object
    admitted again against the same registry (a render asks whether its output is settled:
    renderer.output.render) runs only what the stored object and the operation add."""

    before: tuple[FieldError, ...]  # engine fields, flags, model, overrides
    after: tuple[FieldError, ...]  # compatibility, disaggregated serving, ... annotations
    warned: tuple[str, ...]  # before the provider's own warnings
    warned_after: tuple[str, ...]  # after them, then the flags'
    flag_warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    errors: tuple[FieldError, ...]
    warnings: tuple[str, ...]
    checks: SpecChecks | None = field(default=None, compare=False)  # how it was reached


def check_spec(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    operation: Operation = Operation.CREATE,
    registry: ProviderRegistry,
    checked: SpecChecks | None = None,
) -> Verdict:
    """The rules after the structure check; only for objects that passed `structure_errors`.
    `checked`: the SpecChecks of a verdict on an object equal to `obj` (as JSON: `1`, `1.0`
    and `true` differ) against this `registry`, reused instead of checked again."""
    md = ModelDeployment(obj)
    plugin = registry.plugin(md.provider_name)
    checks = checked if checked is not None else spec_checks(md, plugin, registry)
    own_errors, own_warnings = (
        plugin.rules.admission_checks(
            md, registry.context(md.provider_name), ModelDeployment(old) if old else None
        )
        if plugin is not None
        else ([], [])
    )
    errors = [*checks.before, *own_errors, *checks.after]
    if operation is Operation.CREATE:  # a stored object keeps the name it was admitted with
        errors += check_model_deployment_names(md)
    if operation is Operation.UPDATE and old is not None:
        errors += check_immutable(md, ModelDeployment(old))
    warnings = (*checks.warned, *own_warnings, *checks.warned_after, *checks.flag_warnings)
    return Verdict(tuple(errors), warnings, checks)


def spec_checks(
    md: ModelDeployment, plugin: Provider | None, registry: ProviderRegistry
) -> SpecChecks:
    """check_spec's rules that read neither the stored object nor the operation, in check
    order (`plugin`: the registry's for md's provider)."""
    flag_errors, flag_warnings = (
        check_engine_flags(md, registry.flags, plugin) if plugin is not None else ([], [])
    )
    before = _check_engine_fields(md) + flag_errors + check_pipeline_parallel(md, plugin)
    before += _check_model(md)
    before += _check_overrides(md, plugin)
    after = _check_compatibility(md, registry)
    after += _check_disaggregated(md, registry) if md.is_disaggregated else []
    after += check_volumes(md)
    after += _check_ceilings(md)
    after += check_secret_fields(md)
    after += check_served_names(md)
    after += check_gateway_refs(md, capabilities_of(md, registry))
    after += check_model_deployment_annotations(md)  # the API server checks them on every write
    return SpecChecks(
        tuple(before),
        tuple(after),
        tuple(_warnings(md, registry)),
        tuple(_warnings_after(md)),
        tuple(flag_warnings),
    )


def _check_engine_fields(md: ModelDeployment) -> list[FieldError]:
    errors: list[FieldError] = []
    engine_image = md.engine.get("image") or ""
    if md.legacy_image and engine_image and md.legacy_image != engine_image:
        detail = "conflicts with spec.image; remove spec.image or set both to the same value (spec.engine.image is preferred)"
        errors.append(FieldError("spec.engine.image", Reason.INVALID, detail))
    args: Mapping[str, Any] = md.engine.get("args") or {}
    at_args = FieldPath.root("spec", "engine", "args")
    for key in args:
        if not ARG_KEY.fullmatch(key):
            detail = "an argument name is letters, digits, '_' and '-', without leading dashes (Runway adds --)"
            errors.append(FieldError(str(at_args.key(key)), Reason.INVALID, detail))
    for i, token in enumerate(md.engine.get("extraArgs") or ()):
        flag = _flag_name(token)
        if flag and flag in args:
            detail = (
                f'launch flag "{flag}" is also set in spec.engine.args; set it in exactly one place'
            )
            errors.append(
                FieldError(
                    str(FieldPath.root("spec", "engine", "extraArgs").index(i)),
                    Reason.DUPLICATE,
                    detail,
                )
            )
    return errors


def _flag_name(token: str) -> str:
    """`--key` or `--key=value` -> key; anything else (values, -x, ---x, --) -> ''."""
    if not token.startswith("--") or token.startswith("---"):
        return ""
    return token[2:].split("=", 1)[0]


def _check_model(md: ModelDeployment) -> list[FieldError]:
    if md.model_source == ModelSource.HUGGINGFACE and not md.model_id:
        return [
            FieldError(
                "spec.model.id", Reason.REQUIRED, "required when spec.model.source is huggingface"
            )
        ]
    return []


def _check_overrides(md: ModelDeployment, plugin: Provider | None) -> list[FieldError]:
    if md.overrides is None:
        return []
    sized = plugin.overrides.sized if plugin is not None else frozenset()
    errors = check_global(md.overrides, OVERRIDES, sized)
    if isinstance(md.overrides, Mapping) and plugin is not None:
        errors += plugin.overrides.check(without_blocked(md.overrides, sized), OVERRIDES)
    return errors


def _check_compatibility(md: ModelDeployment, registry: ProviderRegistry) -> list[FieldError]:
    if not md.provider_name or not md.engine_type:
        return []
    fit = compatibility(md, registry)
    if fit.fit is Fit.NOT_FOUND:
        known = ", ".join(registry.configs) or "none"
        detail = f'InferenceProviderConfig "{md.provider_name}" not found (configured: {known})'
        return [FieldError("spec.provider.name", Reason.NOT_FOUND, detail)]
    if fit.fit is Fit.NO_RENDERER:
        detail = (
            f"Runway has no renderer for provider {md.provider_name} "
            f"(it has: {', '.join(registry.plugins)})"
        )
        return [FieldError("spec.provider.name", Reason.UNSUPPORTED, detail)]
    if fit.fit is not Fit.MISMATCH:
        return []
    hint = "; set spec.resources.gpu.count > 0" if fit.why.endswith("without a GPU") else ""
    return [
        FieldError(fit.path, Reason.UNSUPPORTED, f"provider {md.provider_name} {fit.why}{hint}")
    ]


def _check_disaggregated(md: ModelDeployment, registry: ProviderRegistry) -> list[FieldError]:
    errors: list[FieldError] = []
    if md.gpu_count > 0:
        detail = "cannot be set in disaggregated mode; set spec.scaling.prefill.gpu and spec.scaling.decode.gpu"
        errors.append(FieldError("spec.resources.gpu", Reason.FORBIDDEN, detail))
    scaling = md.spec.get("scaling")
    if not isinstance(scaling, Mapping):
        return [
            *errors,
            FieldError(
                "spec.scaling",
                Reason.REQUIRED,
                "disaggregated mode needs spec.scaling.prefill and spec.scaling.decode",
            ),
        ]
    for part in ("prefill", "decode"):
        component = scaling.get(part)
        if not isinstance(component, Mapping):
            errors.append(
                FieldError(
                    f"spec.scaling.{part}", Reason.REQUIRED, "required in disaggregated mode"
                )
            )
        elif not (dig(component, "gpu", "count") or 0) > 0 and not registry.runs_test_backend(md):
            errors.append(
                FieldError(
                    f"spec.scaling.{part}.gpu.count",
                    Reason.REQUIRED,
                    "must be > 0 in disaggregated mode",
                )
            )
    return errors


def _check_ceilings(md: ModelDeployment) -> list[FieldError]:
    spec = md.spec
    errors: list[FieldError] = []
    errors += _at_most(
        dig(spec, "resources", "gpu", "count"),
        "spec.resources.gpu.count",
        Decimal(MAX_GPUS),
        quantity=False,
    )
    errors += _at_most(dig(spec, "resources", "cpu"), "spec.resources.cpu", MAX_CPU, quantity=True)
    errors += _at_most(
        dig(spec, "resources", "memory"), "spec.resources.memory", MAX_MEMORY, quantity=True
    )
    errors += _at_most(
        dig(spec, "scaling", "replicas"),
        "spec.scaling.replicas",
        Decimal(MAX_REPLICAS),
        quantity=False,
    )
    for part in ("prefill", "decode"):
        base = f"spec.scaling.{part}"
        errors += _at_most(
            dig(spec, "scaling", part, "replicas"),
            f"{base}.replicas",
            Decimal(MAX_REPLICAS),
            quantity=False,
        )
        errors += _at_most(
            dig(spec, "scaling", part, "gpu", "count"),
            f"{base}.gpu.count",
            Decimal(MAX_GPUS),
            quantity=False,
        )
        errors += _at_most(
            dig(spec, "scaling", part, "memory"), f"{base}.memory", MAX_MEMORY, quantity=True
        )
    return errors


def _at_most(value: Any, path: str, limit: Decimal, *, quantity: bool) -> list[FieldError]:
    # "" is unset: the CRD declares these quantities as plain strings, the API server stores ""
    # as it is, AI Runway's Go types read it as absent, and every renderer leaves it out.
    if value is None or (quantity and value == ""):
        return []
    problem = quantity_problem(value)
    if problem is not None or (not quantity and not isinstance(value, int)):
        return [FieldError(path, Reason.INVALID, problem or "must be an integer")]
    amount = parse_quantity(value) or Decimal(0)  # it parses: quantity_problem said so
    if amount < 0:
        return [FieldError(path, Reason.INVALID, "must not be negative")]
    if amount > limit:
        return [
            FieldError(path, Reason.INVALID, f"exceeds the maximum allowed ({format_limit(limit)})")
        ]
    return []


def _warnings(md: ModelDeployment, registry: ProviderRegistry) -> list[str]:
    """The warnings before the provider's own (providers/<name>/render.py admission_checks)."""
    warnings: list[str] = []
    if md.served_name and md.model_source == ModelSource.CUSTOM:
        warnings.append("spec.model.servedName is ignored when spec.model.source is custom")
    if md.engine.get("trustRemoteCode") is True:
        warnings.append(
            "spec.engine.trustRemoteCode: true runs code from the model repository inside the serving pods"
        )
    for volume in md.volumes:
        if volume.get("readOnly") is not True:
            continue
        name = volume.get("name")
        if volume.get("purpose") == VolumePurpose.COMPILATION_CACHE:
            warnings.append(
                f'volume "{name}": a compilation cache needs write access; readOnly makes it useless'
            )
        elif (
            volume.get("purpose") == VolumePurpose.MODEL_CACHE
            and md.model_source == ModelSource.HUGGINGFACE
        ):
            warnings.append(
                f'volume "{name}": the model cache is read-only, so the model is not downloaded; the claim must already hold it'
            )
    plugin = registry.plugin(md.provider_name)
    if plugin is not None and not plugin.overrides.roots and md.overrides is not None:
        warnings.append(f"spec.provider.overrides is ignored by provider {md.provider_name}")
    config = registry.get(md.provider_name)
    if config is not None and not config.ready:
        why = config.not_ready_reason
        warnings.append(
            f"provider {md.provider_name} is not ready (its InferenceProviderConfig status.ready is false"
            f"{': ' + why if why else ''})"
        )
    return warnings


def _warnings_after(md: ModelDeployment) -> list[str]:
    """The warnings after the provider's own."""
    warnings = []
    if not md.is_disaggregated and any(
        k in (md.spec.get("scaling") or {}) for k in ("prefill", "decode")
    ):
        warnings.append(
            "spec.scaling.prefill and spec.scaling.decode are ignored in aggregated mode"
        )
    return warnings
