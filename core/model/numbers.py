"""Numbers Kubernetes cannot hold: integers outside int64, floats that are not finite.

The API server stores integers as int64 and refuses NaN and infinities, and CEL's int is int64
too; a YAML file or a fuzzer can still hand Runway such a value. Every one is reported with its
field, before any code does arithmetic on it.
"""

from __future__ import annotations

import math
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.jsonvalue import nodes

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_REPORTED = 10  # a denial names this many; the rest are counted


def number_errors(value: Any, at: FieldPath) -> list[FieldError]:
    """Every out-of-range number under `value`, in document order (the first MAX_REPORTED)."""
    if not _has_bad_number(value):  # the common case: one cheap pass, no paths built
        return []
    found: list[FieldError] = []
    stack: list[tuple[Any, FieldPath]] = [(value, at)]
    extra = 0
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((node[k], path.child(str(k))) for k in reversed(list(node)))
        elif isinstance(node, list):
            stack.extend((node[i], path.index(i)) for i in reversed(range(len(node))))
        elif (detail := _problem(node)) is not None:
            if len(found) < MAX_REPORTED:
                found.append(FieldError(str(path), Reason.INVALID, detail))
            else:
                extra += 1
    if extra:
        found.append(
            FieldError(str(at), Reason.INVALID, f"{extra} more numbers out of range not listed")
        )
    return found


def _problem(node: Any) -> str | None:
    if isinstance(node, bool):
        return None
    if isinstance(node, int) and not INT64_MIN <= node <= INT64_MAX:
        return "integer out of range (Kubernetes integers are 64-bit: -2^63 to 2^63-1)"
    if isinstance(node, float) and not math.isfinite(node):
        return "must be a finite number (not NaN or infinity)"
    return None


def _has_bad_number(value: Any) -> bool:
    for node in nodes(value):
        kind = type(node)
        if kind is int:
            if not INT64_MIN <= node <= INT64_MAX:
                return True
        elif kind is float:
            if not math.isfinite(node):
                return True
        elif (
            kind is not dict
            and kind is not list
            and (
                isinstance(node, dict | list)
                or (isinstance(node, int | float) and _problem(node) is not None)
            )
        ):
            return True  # subclasses (rare): the slow walk decides
    return False
