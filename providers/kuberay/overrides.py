"""KubeRay: layer 2 of spec.provider.overrides, what its upstream object accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.plugin import Overrides

NAME = "kuberay"
# KubeRay consumes no overrides. An empty OVERRIDE_ROOTS means exactly that: whatever passes
# layer 1 is accepted and ignored, and admission warns, because the RayService is rendered from
# the ModelDeployment spec alone.
OVERRIDE_ROOTS: frozenset[str] = frozenset()


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: nothing to check; the overrides are not used."""
    return []


OVERRIDES = Overrides(OVERRIDE_ROOTS, check_overrides)
