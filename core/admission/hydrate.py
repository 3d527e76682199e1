"""Hydration: what the mutating webhook does, as a pure function.

structure check -> defaults -> engine (explicit, sticky, or selected) -> stamp -> provider
(explicit, sticky, or selected) -> stamp. The input is never changed. `hydrate_shared` writes
defaults and stamps into copies of only the mappings it changes and shares everything else with
the input, so a diff of the two (the webhook's patch) walks only what hydration changed;
`hydrate` returns a deep copy of that, for callers that keep the object. Hydrating a hydrated
object changes nothing, so a rendered ModelDeployment applied again gets no patch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.defaults import defaulted
from core.model.jsonvalue import json_copy
from core.model.kinds import (
    ANNOTATION_ENGINE_REASON,
    ANNOTATION_ENGINE_SELECTION,
    ANNOTATION_PROVIDER_REASON,
    ANNOTATION_PROVIDER_SELECTION,
    API_VERSION,
    DEFAULT_GPU_TYPE,
    MODEL_DEPLOYMENT,
    Choice,
    Engine,
    ModelDeployment,
    dig,
)
from core.model.numbers import INT64_MAX, INT64_MIN, number_errors
from core.schema.bounds import MAX_NESTING, MAX_VALUES, size_errors
from core.schema.compiled import Checker
from core.schema.crds import model_deployment_spec
from core.selection.choice import Decision, select_engine, select_provider
from core.selection.configs import ProviderRegistry


@functools.cache
def _spec_checker() -> Checker:
    """The spec schema's checker, built once instead of on every admission (building the schema
    was a third of the structure check); its nodes are read on first use and kept (threads may
    read one node twice; each reading is the same). Checking never changes the schema."""
    return Checker(model_deployment_spec())


STICKY_REASON = "kept from the previous version of this object (selection is sticky)"
_ANNOTATIONS = {
    "engine": (ANNOTATION_ENGINE_SELECTION, ANNOTATION_ENGINE_REASON),
    "provider": (ANNOTATION_PROVIDER_SELECTION, ANNOTATION_PROVIDER_REASON),
}


@dataclass(frozen=True, slots=True)
class Hydration:
    """The hydrated object, the decisions, problems. `explain` shows the full rule trace."""

    obj: dict[str, Any]
    engine: Decision | None
    provider: Decision | None
    errors: tuple[FieldError, ...]
    warnings: tuple[str, ...]
    structural: bool = False  # the errors are the structure check's: nothing else can run


def structure_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """What the API server would refuse before any webhook runs (kind, nesting, spec schema),
    and objects too large to walk (core.schema.bounds)."""
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != MODEL_DEPLOYMENT:
        got = f"{obj.get('apiVersion')} {obj.get('kind')}"
        return [
            FieldError(
                "kind", Reason.INVALID, f"expected {API_VERSION} {MODEL_DEPLOYMENT}, got {got}"
            )
        ]
    if not is_small_and_plain(obj):  # the exact checks name the field
        errors = size_errors(obj)
        if errors:  # nothing below may walk an object this large
            return errors
        errors = number_errors(obj, FieldPath())
        if errors:  # nothing below may compute with a number it cannot hold
            return errors
    errors = []
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        errors.append(FieldError("metadata", Reason.REQUIRED, "metadata must be an object"))
    else:
        annotations = metadata.get("annotations")
        if annotations is not None and not (
            isinstance(annotations, Mapping)
            and all(isinstance(v, str) for v in annotations.values())
        ):
            errors.append(
                FieldError("metadata.annotations", Reason.INVALID, "must map strings to strings")
            )
    if "spec" not in obj:
        errors.append(FieldError("spec", Reason.REQUIRED, "required field is missing"))
    else:
        errors += _spec_checker().errors(obj["spec"], FieldPath.root("spec"))
    return errors


def is_small_and_plain(obj: Mapping[str, Any]) -> bool:
    """One walk, level by level as size_errors: within MAX_VALUES and MAX_NESTING, and every
    value a JSON type (exactly) with its numbers in range. True means size_errors and
    number_errors find nothing (a property test holds them to it); False, that they must look."""
    values = len(obj)
    if values > MAX_VALUES:
        return False
    depth, level = 1, list(obj.values())
    while level:
        below: list[Any] = []
        for node in level:
            kind = type(node)
            if kind is dict:
                children: Any = node.values()
            elif kind is list:
                children = node
            elif kind is str or kind is bool or node is None:
                continue
            elif kind is int:
                if not INT64_MIN <= node <= INT64_MAX:
                    return False
                continue
            elif kind is float:
                if not math.isfinite(node):
                    return False
                continue
            else:
                return False
            if depth >= MAX_NESTING:
                return False
            values += len(children)
            if values > MAX_VALUES:  # before walking them: a long list costs one step
                return False
            below.extend(children)
        depth, level = depth + 1, below
    return True


def hydrate(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, registry: ProviderRegistry
) -> Hydration:
    """Defaults and selection stamped into a new copy of `obj`; `old` is the stored version."""
    result = hydrate_shared(obj, old=old, registry=registry)
    return result if result.structural else replace(result, obj=json_copy(result.obj))


def hydrate_shared(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, registry: ProviderRegistry
) -> Hydration:
    """As hydrate, but the object shares with `obj` every value hydration left as it was, so
    that neither may be changed afterwards: for a patch, computed at once (the webhook)."""
    errors = structure_errors(obj)
    if errors:
        return Hydration(dict(obj), None, None, tuple(errors), (), structural=True)
    out = defaulted(obj)
    md = ModelDeployment(out)
    previous = ModelDeployment(old) if old is not None else None
    provider_name = md.provider_name  # the provider is stamped last: this holds until then
    engine: Decision | FieldError | None
    engine = _recorded(md, "engine", md.engine_type) or _sticky(previous, "engine")
    if engine is None and registry.runs_test_backend(md):
        reason = registry.plugins[md.provider_name].test_backend_reason  # the provider's words
        engine = Decision(Engine.VLLM.value, reason, Choice.AUTO)
    if engine is None:
        engine = select_engine(md, registry, explicit_provider=provider_name)
    if isinstance(engine, FieldError):
        return Hydration(out, None, None, (engine,), ())
    _stamp(out, obj, "engine", engine)
    if engine.choice is Choice.AUTO and not md.needs_gpu and engine.value != Engine.LLAMACPP:
        # Record "no GPU" so that re-admission, which now sees an engine, does not default one.
        out["spec"].setdefault("resources", {"gpu": {"count": 0, "type": DEFAULT_GPU_TYPE}})
    warnings: tuple[str, ...] = ()
    provider: Decision | FieldError | None
    provider = _recorded(md, "provider", provider_name) or _sticky(previous, "provider")
    if provider is None:
        choice = select_provider(out["spec"], md, registry)
        provider, warnings = choice.decision, choice.warnings
    if isinstance(provider, FieldError):
        return Hydration(out, engine, None, (provider,), warnings)
    _stamp(out, obj, "provider", provider)
    return Hydration(out, engine, provider, (), warnings)


def _recorded(md: ModelDeployment, what: str, value: str) -> Decision | None:
    """The decision already stamped in this object, or an explicit one from its spec."""
    if not value:
        return None
    field = "spec.engine.type" if what == "engine" else "spec.provider.name"
    return _annotated(md, what, value) or Decision(value, f"set in {field}", Choice.EXPLICIT)


def _annotated(md: ModelDeployment, what: str, value: str) -> Decision | None:
    selection_key, reason_key = _ANNOTATIONS[what]
    choice, reason = md.annotations.get(selection_key), md.annotations.get(reason_key)
    if choice in tuple(Choice) and isinstance(reason, str) and reason:
        return Decision(value, reason, Choice(choice))
    return None


def _sticky(previous: ModelDeployment | None, what: str) -> Decision | None:
    """On UPDATE, the previous version's decision, kept as it was recorded (selection is sticky)."""
    if previous is None:
        return None
    value = previous.recorded_engine if what == "engine" else previous.recorded_provider
    if not value:
        return None
    return _annotated(previous, what, value) or Decision(value, STICKY_REASON, Choice.AUTO)


def _stamp(out: dict[str, Any], source: Mapping[str, Any], what: str, decision: Decision) -> None:
    """Write `decision` into `out`, copying first each mapping it shares with `source` (spec
    and spec.engine are defaulted's own copies already)."""
    spec = out["spec"]
    if what == "engine":
        spec.setdefault("engine", {})["type"] = decision.value
    else:
        provider = spec.get("provider")
        provider = spec["provider"] = dict(provider) if isinstance(provider, dict) else {}
        provider["name"] = decision.value
    metadata = out.setdefault("metadata", {})
    if metadata is source.get("metadata") and type(metadata) is dict:
        metadata = out["metadata"] = dict(metadata)
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    elif annotations is dig(source, "metadata", "annotations"):
        annotations = metadata["annotations"] = dict(annotations)
    selection_key, reason_key = _ANNOTATIONS[what]
    annotations[selection_key] = decision.choice.value
    annotations[reason_key] = decision.reason
