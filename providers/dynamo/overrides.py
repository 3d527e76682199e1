"""NVIDIA Dynamo: layer 2 of spec.provider.overrides, what its upstream object accepts."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from core.checks.overrides import check_accepted, object_roots
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.plugin import Overrides
from core.model.quantity import format_limit, parse_quantity, quantity_problem

NAME = "dynamo"
# The Frontend's and the endpoint picker's own sizing: the same caps admission puts on a
# ModelDeployment's replicas, CPUs and memory (core/admission/validation.py MAX_REPLICAS,
# MAX_CPU, MAX_MEMORY; not imported: the render's start-up loads no admission module).
MAX_REPLICAS = 32
_MAX = {"cpu": Decimal(512), "memory": Decimal(4) * 2**40}
_REPLICAS = {"type": "integer", "minimum": 1, "maximum": MAX_REPLICAS}
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
                "replicas": _REPLICAS,
                "resources": {
                    "type": "object",
                    "properties": {"cpu": {"type": "string"}, "memory": {"type": "string"}},
                },
            },
        },
        "epp": {
            "type": "object",
            "properties": {"replicas": _REPLICAS, "image": {"type": "string", "minLength": 1}},
        },
    },
}
OVERRIDE_ROOTS = frozenset(_SHAPE["properties"])
# The roots whose replicas/resources size a Dynamo service Runway renders (the Frontend without
# a gateway, the endpoint picker behind one): typed and bounded here, so the global sizing rule
# leaves them to this check.
SIZED_ROOTS = frozenset({"frontend", "epp"})


def check_overrides(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Layer 2: accepted roots, then strict decoding of routerMode, frontend and epp, then the
    Frontend's CPU and memory as bounded quantities."""
    errors = check_accepted(overrides, NAME, _SHAPE, at)
    frontend = overrides.get("frontend")
    resources = frontend.get("resources") if isinstance(frontend, Mapping) else None
    if not isinstance(resources, Mapping):
        return errors
    for key, limit in _MAX.items():
        value = resources.get(key)
        if not isinstance(value, str):
            continue  # absent, or a type error the shape already reported
        path = str(at.child("frontend", "resources", key))
        problem = quantity_problem(value)
        amount = parse_quantity(value)
        if problem is None and amount is not None and amount <= 0:
            problem = "must be more than zero"
        elif problem is None and amount is not None and amount > limit:
            problem = f"exceeds the maximum allowed ({format_limit(limit)})"
        if problem is not None:
            errors.append(FieldError(path, Reason.INVALID, problem))
    return errors


OVERRIDES = Overrides(OVERRIDE_ROOTS, check_overrides, sized=SIZED_ROOTS)
