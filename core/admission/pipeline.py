"""The admission pipeline, shared by the webhook and `runway validate`: mutate, then validate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.admission.hydrate import Hydration, hydrate
from core.admission.patch import diff, same_json
from core.admission.validation import Operation, SpecChecks, check_spec
from core.checks.credentials import redact, redact_errors
from core.fields.errors import FieldError
from core.selection.configs import ProviderRegistry


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer for one ModelDeployment: allowed or not, the mutated object, and why. Its
    JSONPatch is the Verdict's (core.admission.verdict), computed only where it is sent (the
    renderer needs none)."""

    allowed: bool
    obj: dict[str, Any]
    errors: tuple[FieldError, ...]
    warnings: tuple[str, ...]
    hydration: Hydration
    validation_warnings: tuple[str, ...] = ()  # the validating webhook's share of `warnings`
    # what validation found whatever the operation (core.admission.validation.SpecChecks)
    checks: SpecChecks | None = field(default=None, compare=False)


def admit(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    registry: ProviderRegistry,
    known: Admission | None = None,
) -> Admission:
    """Mutate then validate, as the API server calls the two webhooks; `old` means UPDATE. No
    error or warning repeats a credential found in the object (core.checks.credentials.redact).
    `known`: an admission against this `registry` whose validation may be reused where this
    one hydrates to the same object (a render asking whether its output is settled admits the
    same source again, as an update of its own output)."""
    admission = _admit(obj, old=old, registry=registry, known=known)
    if admission.allowed:
        return admission
    return replace(
        admission,
        errors=redact_errors(admission.errors),
        warnings=tuple(redact(w) for w in admission.warnings),
        validation_warnings=tuple(redact(w) for w in admission.validation_warnings),
    )


def _admit(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None,
    registry: ProviderRegistry,
    known: Admission | None,
) -> Admission:
    hydration = hydrate(obj, old=old, registry=registry)
    operation = Operation.UPDATE if old is not None else Operation.CREATE
    if hydration.structural:
        return Admission(False, dict(obj), hydration.errors, hydration.warnings, hydration)
    if hydration.errors:  # selection failed; the other rules still run, so every error is told
        rest = check_spec(hydration.obj, old=old, operation=operation, registry=registry)
        errors = hydration.errors + tuple(e for e in rest.errors if e not in hydration.errors)
        return Admission(False, dict(obj), errors, hydration.warnings, hydration)
    # hydrate() already ran the structure check on this object; it is not repeated.
    checked = None
    if known is not None and known.checks is not None and same_json(known.obj, hydration.obj):
        checked = known.checks  # a function of the object and the registry only
    verdict = check_spec(
        hydration.obj, old=old, operation=operation, registry=registry, checked=checked
    )
    warnings = hydration.warnings + verdict.warnings
    return Admission(
        not verdict.errors,
        hydration.obj,
        verdict.errors,
        warnings,
        hydration,
        verdict.warnings,
        verdict.checks,
    )


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn `before` into `after` (empty when they are equal).

    A walk of the two objects (core.admission.patch.diff), held by a property test to give the
    object `jsonpatch.make_patch`'s patch gives, over generated objects, every hydration of
    generated ModelDeployments and every example (tests/unit/core/admission/test_patch.py). A value
    counts as changed when its JSON text does, as make_patch counts it (`1`, `1.0` and `true`
    differ).
    """
    return diff(before, after)
