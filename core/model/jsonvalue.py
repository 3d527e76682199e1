"""Decoded JSON/YAML values (dicts, lists, scalars): copied and walked quickly."""

from __future__ import annotations

from collections.abc import Iterator
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


def nodes(value: Any) -> Iterator[Any]:
    """Every value within a decoded JSON value, `value` first, each container before what it
    holds: what a container holds is taken only once the caller has looked at it, so a check
    that stops at a container reads nothing inside. Only plain dicts and lists are walked into
    (a subclass is a node the caller judges). No recursion: any depth."""
    stack = [value]
    while stack:
        node = stack.pop()
        yield node
        kind = type(node)
        if kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
