"""KubeRay: one ray.io RayService per ModelDeployment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.errors import FieldError
from providers.fieldpath import FieldPath

NAME = "kuberay"
# KubeRay consumes no overrides. An empty OVERRIDE_ROOTS means exactly that: whatever passes
# layer 1 is accepted and ignored, and admission warns, because the RayService is rendered from
# the ModelDeployment spec alone.
OVERRIDE_ROOTS: frozenset[str] = frozenset()


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: nothing to check; the overrides are not used."""
    return []
