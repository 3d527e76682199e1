"""Copying decoded JSON/YAML values (dicts, lists, scalars) quickly."""

from __future__ import annotations

from typing import Any


def json_copy(value: Any) -> Any:
    """A deep copy of a decoded JSON value: new dicts and lists, the (immutable) scalars shared.

    Several times faster than copy.deepcopy, which keeps a memo and dispatches per type; only
    for values already checked for nesting depth (structure_errors), as it recurses.
    """
    if type(value) is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if type(value) is list:
        return [json_copy(v) for v in value]
    return value
