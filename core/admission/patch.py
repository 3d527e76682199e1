"""JSON Patch (RFC 6902) from two versions of an object, in one walk of what differs.

Mappings are compared key by key and descended into; anything else that differs (a list, a
scalar, a mapping where there was none) is replaced whole. Hydration adds defaults and stamps
into mappings and fills in list items, so its patches are a handful of `add`s and `replace`s at
the places it touched: what make_patch finds after comparing every element of both versions,
with less work. A value counts as changed when its JSON text changes, as make_patch counts it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The operations that turn `before` into `after`; [] when they are equal. The values in
    the operations are `after`'s own (not copies, unlike make_patch's): the webhook and
    `runway validate` serialize the patch at once, and nothing changes `after` after it."""
    ops: list[dict[str, Any]] = []
    _mapping(before, after, "", ops)
    return ops


def _mapping(
    before: Mapping[str, Any], after: Mapping[str, Any], path: str, ops: list[dict[str, Any]]
) -> None:
    if not before.keys() <= after.keys():  # in C; hydration removes nothing
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": _join(path, key)})
    for key, value in after.items():
        if key not in before:
            ops.append({"op": "add", "path": _join(path, key), "value": value})
            continue
        old = before[key]
        if old is value:  # hydration shares every value it did not change with its input
            continue
        if _is_mapping(old) and _is_mapping(value):
            # Descended into at once, equal or not: asking same_json first walked an equal mapping
            # twice (== in C, then its types in Python), and a hydrated object is mostly equal.
            _mapping(old, value, _join(path, key), ops)
        elif not same_json(old, value):
            ops.append({"op": "replace", "path": _join(path, key), "value": value})


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # dicts without the ABC's check


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text is equal, which is make_patch's test for a value: `1`, `1.0` and `true`
    are three values (Python's == holds them one). Python's == rejects what differs at C speed;
    only a subtree it calls equal is walked for its types."""
    if a is b:
        return True
    if a != b:
        return _nan(a) and _nan(b)  # NaN is unequal to itself; its text is not
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return all(map(same_json, a, b))
    return type(a) is type(b)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _join(path: str, key: object) -> str:
    """A JSON Pointer one key deeper (RFC 6901: `~` as `~0`, `/` as `~1`)."""
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
