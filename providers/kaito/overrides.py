"""KAITO: layer 2 of spec.provider.overrides, what its upstream object accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.checks.overrides import check_accepted, object_roots
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.plugin import Overrides

NAME = "kaito"
_SHAPE = object_roots("resource", "inference")
OVERRIDE_ROOTS = frozenset(_SHAPE["properties"])  # Workspace keeps them at the object root


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: accepted roots; resource.count is refused (replicas come from spec.scaling)."""
    errors = check_accepted(overrides, NAME, _SHAPE, at)
    resource = overrides.get("resource")
    if isinstance(resource, Mapping) and "count" in resource:
        errors.append(
            FieldError(
                str(at.child("resource", "count")),
                Reason.FORBIDDEN,
                "the Workspace replica count comes from spec.scaling.replicas; "
                "set spec.scaling.replicas instead",
            )
        )
    return errors


OVERRIDES = Overrides(OVERRIDE_ROOTS, check_overrides)
