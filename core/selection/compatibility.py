"""Whether a ModelDeployment's provider can run it: the compatibility rule of an explicit (or
kept) provider choice, in one place. Validation denies what does not fit
(core.admission.validation), and `explain` says why an explicit choice that automatic
selection would exclude stands or is denied (kubeio.explanation): both read this answer.

A provider fits when Runway has its InferenceProviderConfig and a renderer for it, and the
config offers the engine for this serving mode on this hardware; where it does not, a provider's
test backend (which runs instead of an engine, with no GPU) still fits. Not being ready never
denies: admission takes the choice with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry


class Fit(StrEnum):
    RUNS = "runs"  # the config offers the engine this way
    TEST_BACKEND = "test backend"  # it does not, but the provider's test backend runs instead
    NOT_FOUND = "not found"  # no InferenceProviderConfig of that name
    NO_RENDERER = "no renderer"  # a config, but Runway has no renderer for the provider
    MISMATCH = "mismatch"  # the config does not offer the engine this way


@dataclass(frozen=True, slots=True)
class Compatibility:
    """How `md`'s provider fits it; for a MISMATCH the field at fault and why not. `ready`:
    the provider's config says it is ready (False when there is none)."""

    fit: Fit
    path: str = ""
    why: str = ""
    ready: bool = False

    @property
    def denied(self) -> bool:
        return self.fit in (Fit.NOT_FOUND, Fit.NO_RENDERER, Fit.MISMATCH)


def compatibility(md: ModelDeployment, registry: ProviderRegistry) -> Compatibility:
    """How the provider named in `md` fits its engine, serving mode and hardware."""
    config = registry.get(md.provider_name)
    if config is None:
        return Compatibility(Fit.NOT_FOUND)
    if registry.plugin(md.provider_name) is None:
        return Compatibility(Fit.NO_RENDERER, ready=config.ready)
    mismatch = config.mismatch(md.engine_type, gpu=md.needs_gpu, mode=md.serving_mode)
    if mismatch is None:
        return Compatibility(Fit.RUNS, ready=config.ready)
    if registry.runs_test_backend(md):  # a test backend needs no GPU
        return Compatibility(Fit.TEST_BACKEND, ready=config.ready)
    path, why = mismatch
    return Compatibility(Fit.MISMATCH, path, why, ready=config.ready)
