"""Direct vLLM: layer 2 of spec.provider.overrides, what its upstream object accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.checks.overrides import check_accepted, check_no_pod_spec, object_roots
from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.plugin import Overrides

NAME = "vllm"
_SHAPE = object_roots("spec")
OVERRIDE_ROOTS = frozenset(_SHAPE["properties"])  # merged into the Deployment spec


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: only `spec`, an object, and never its `template.spec` (see check_no_pod_spec)."""
    return check_accepted(overrides, NAME, _SHAPE, at) + check_no_pod_spec(overrides, at)


OVERRIDES = Overrides(OVERRIDE_ROOTS, check_overrides)
