"""KAITO: one kaito.sh Workspace per ModelDeployment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.errors import FieldError, Reason
from providers.fieldpath import FieldPath
from providers.overrides import check_accepted, object_roots

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
