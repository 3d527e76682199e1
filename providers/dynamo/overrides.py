"""NVIDIA Dynamo: layer 2 of spec.provider.overrides, what its upstream object accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.checks.overrides import check_accepted, object_roots
from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.plugin import Overrides

NAME = "dynamo"
# `spec` is merged into the DynamoGraphDeployment spec. The other roots are Runway's own
# transformer keys: decoded strictly here and stripped before anything is written upstream.
_SHAPE: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        **object_roots("spec")["properties"],
        "routerMode": {"type": "string", "enum": ["round-robin", "random", "kv", "direct"]},
        "frontend": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "resources": {
                    "type": "object",
                    "properties": {"cpu": {"type": "string"}, "memory": {"type": "string"}},
                },
            },
        },
        "epp": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "image": {"type": "string", "minLength": 1},
            },
        },
    },
}
OVERRIDE_ROOTS = frozenset(_SHAPE["properties"])


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: accepted roots, then strict decoding of routerMode, frontend and epp."""
    return check_accepted(overrides, NAME, _SHAPE, at)


OVERRIDES = Overrides(OVERRIDE_ROOTS, check_overrides)
