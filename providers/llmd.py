"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.errors import FieldError
from providers.fieldpath import FieldPath
from providers.overrides import check_accepted, object_roots

NAME = "llmd"
_SHAPE = object_roots("spec")
OVERRIDE_ROOTS = frozenset(_SHAPE["properties"])  # merged into the Deployment spec


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: only `spec`, and it must be an object."""
    return check_accepted(overrides, NAME, _SHAPE, at)
