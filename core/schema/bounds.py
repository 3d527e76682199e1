"""How large an object may be before any other code walks it: nesting depth and value count.

Every check after this one walks the whole object (numbers, the schema, overrides, credentials,
the JSONPatch), so its cost grows with the number of values in it. A request may hold 3 MiB:
200,000-400,000 values, several seconds of CPU in those walks. The API server's webhook timeout
is 5 s. A ModelDeployment holds a few hundred values, its managedFields about as many again per
manager; 10,000 leaves room for large overrides and bounds one admission to about 0.1 s of CPU.
This walk stops at either limit, so its own cost is bounded too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from itertools import islice
from typing import Any

from core.fields.errors import FieldError, Reason

MAX_NESTING = 100
MAX_VALUES = 10_000  # map entries and list items, at any depth, the whole object together


def size_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """An error naming the top-level field where the object goes deeper than MAX_NESTING or
    past MAX_VALUES values, or none. Decoded JSON/YAML only: dicts and lists. Level by level,
    and a container's entries are counted before they are walked: a list of a million items is
    refused in one step, and no value costs more than a place in a list."""
    values = len(obj)
    if values > MAX_VALUES:
        return [_too_many(str(next(islice(obj, MAX_VALUES, None))))]
    for key, value in obj.items():
        depth, level = 1, [value]  # the object itself is level 1, its fields' values level 2
        while level:
            below: list[Any] = []
            for node in level:
                if isinstance(node, dict):
                    children: Collection[Any] = node.values()
                elif isinstance(node, list):
                    children = node
                else:
                    continue
                if depth >= MAX_NESTING:
                    detail = f"nested deeper than {MAX_NESTING} levels"
                    return [FieldError(str(key), Reason.INVALID, detail)]
                values += len(children)
                if values > MAX_VALUES:
                    return [_too_many(str(key))]
                below.extend(children)
            depth, level = depth + 1, below
    return []


def _too_many(top: str) -> FieldError:
    detail = (
        f"the object holds more than {MAX_VALUES} values (map entries and list items, at any "
        "depth); Runway's objects need a few hundred: keep bulk data out of them"
    )
    return FieldError(top, Reason.TOO_MANY, detail)
