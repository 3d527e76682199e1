"""UPDATE rules: what identifies a running deployment cannot change in place."""

from __future__ import annotations

from core.checks.storage import check_managed_unchanged
from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment

_RECREATE = "changing it requires deleting and recreating the ModelDeployment"


def check_immutable(new: ModelDeployment, old: ModelDeployment) -> list[FieldError]:
    """Errors for changes of model.id, model.source, engine.type, provider.name, serving.mode."""
    errors: list[FieldError] = []
    pairs = (
        ("spec.model.id", old.model_id, new.model_id, False),
        ("spec.model.source", old.model_source, new.model_source, False),
        ("spec.engine.type", old.recorded_engine, new.engine_type, True),
        ("spec.provider.name", old.recorded_provider, new.provider_name, True),
        ("spec.serving.mode", old.serving_mode, new.serving_mode, False),
    )
    for path, before, after, once_set in pairs:
        if once_set and not (before and after):
            continue  # first set, or cleared (the sticky value is stamped back)
        if before != after:
            detail = f'is immutable (was "{before}", now "{after}"); {_RECREATE}'
            errors.append(FieldError(path, Reason.IMMUTABLE, detail))
    return errors + check_managed_unchanged(new.volumes, old.volumes)
