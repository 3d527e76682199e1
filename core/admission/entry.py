"""The one entry of admission: an object of any kind in, its Verdict out.

The kind decides the checks, here and nowhere else: a ModelDeployment goes through the pipeline
(core.admission.pipeline: mutate, then validate), an InferenceProviderConfig and an
ExternalModelProvider through their checks (core.admission.configs), and any other kind is not
Runway's to judge. The webhook, `runway validate`, `explain`, the portal's Models page and the
gateway merge call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.admission.configs import check_external_provider, check_provider_config
from core.admission.hydrate import hydrate_shared
from core.admission.pipeline import admit
from core.admission.verdict import EMP, IPC, MD, Kind, Step, Verdict, kind_of
from core.model.destinations import NO_DESTINATIONS, Destinations
from core.model.kinds import NOT_RUNWAYS
from core.selection.configs import ProviderRegistry


def admit_object(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    registry: ProviderRegistry,
    step: Step = Step.ADMIT,
    kind: Kind | None = None,
    destinations: Destinations = NO_DESTINATIONS,
    known: Verdict | None = None,
) -> Verdict:
    """Admission of `obj` (`old`: its stored version, an UPDATE) as `step` says, by its kind:
    `kind` when the caller knows it otherwise (the webhook's request names it), else the
    object's own. `destinations`: the internal hosts an ExternalModelProvider may name.
    `known`: a verdict of the same object against `registry` whose validation may be reused
    (core.admission.pipeline.admit)."""
    found = kind if kind is not None else kind_of(obj)
    if found == MD:
        return _model_deployment(obj, old=old, registry=registry, step=step, known=known)
    if found not in (IPC, EMP):
        return Verdict(obj, old, True, skipped=NOT_RUNWAYS)
    if step is Step.MUTATE:  # no mutating webhook is called for them: nothing changes
        return Verdict(obj, old, True)
    if found == IPC:
        errors = check_provider_config(obj)
    else:
        errors = check_external_provider(obj, old=old, destinations=destinations)
    return Verdict(obj, old, not errors, tuple(errors))


def _model_deployment(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None,
    registry: ProviderRegistry,
    step: Step,
    known: Verdict | None,
) -> Verdict:
    if step is Step.MUTATE:
        # The object shares what hydration left as it was with `obj`: the patch walks only
        # what changed. Denied here, the validating webhook never runs: every error is told.
        hydration = hydrate_shared(obj, old=old, registry=registry)
        if hydration.errors or hydration.provider is None:
            every = admit(obj, old=old, registry=registry)
            return Verdict(
                obj,
                old,
                False,
                every.errors,
                hydration.warnings,
                hydration=hydration,
                admission=every,
            )
        return Verdict(
            obj, old, True, (), hydration.warnings, hydration.obj, True, hydration=hydration
        )
    admission = admit(
        obj, old=old, registry=registry, known=known.admission if known is not None else None
    )
    hydration = admission.hydration
    if step is Step.VALIDATE:  # validation changes nothing; its share of the warnings
        warnings, mutated = admission.validation_warnings, False
    else:
        warnings, mutated = admission.warnings, not (hydration.structural or hydration.errors)
    return Verdict(
        obj,
        old,
        admission.allowed,
        admission.errors,
        warnings,
        admission.obj,
        mutated=mutated,
        hydration=hydration,
        admission=admission,
    )
