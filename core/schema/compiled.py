"""The structural check of one schema, with the common answer made cheap.

Nearly every value admission and the renderer check is valid, and `check_schema` spends most of
its time on that answer: reading the same schema keywords again at every node and building the
path of every field it passes. A `Checker` reads each schema node's keywords once, on first
use, into a `_Node`, and asks the nodes only whether a value passes: no paths, no errors, and it
stops at the first failure. Only a value that fails is walked again by `check_schema`, which
names every error. Both hold to one rule (a value passes exactly when `check_schema` finds
nothing); tests/unit/core/schema/test_schema_compiled.py holds the two equal over generated schemas and
values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.schema.structural import (
    EMBEDDED_KEYS,
    JSON_TYPES,
    MAX_KEY_LENGTH,
    check_schema,
    pattern_problem,
)

_MISSING: Any = object()  # a keyword the schema does not hold (None is a value a schema may hold)
_NodeKey = tuple[int, bool, bool]  # id of the schema node, at an object's root, in a branch


class Checker:
    """`check_schema(value, schema, at)` for one schema, kept for as long as the schema is."""

    __slots__ = ("_nodes", "schema")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._nodes: dict[_NodeKey, _Node] = {}

    def errors(self, value: Any, at: FieldPath) -> list[FieldError]:
        """Every structural error of `value` at `at`, as check_schema gives them."""
        if self.passes(value, root=not at.parts):
            return []
        return check_schema(value, self.schema, at)

    def passes(self, value: Any, *, root: bool) -> bool:
        """Whether check_schema finds nothing; `root`: `value` is a whole object (its apiVersion,
        kind and metadata are the API server's, whatever the schema declares)."""
        return _node(self._nodes, self.schema, root, False).passes(value)


def _never(value: Any) -> bool:
    return False


def _node(
    nodes: dict[_NodeKey, _Node], schema: Mapping[str, Any], root: bool, branch: bool
) -> _Node:
    key = (id(schema), root, branch)
    node = nodes.get(key)
    if node is None:
        node = nodes[key] = _Node(nodes, schema, root, branch)
    return node


class _Node:
    """One schema node's keywords, read on first use. `root`: the value is at the root of the
    check (an object's apiVersion, kind and metadata are skipped); `branch`: inside an anyOf or
    oneOf branch, where a field nothing declares is no failure (check_schema's _branch_errors)."""

    __slots__ = (
        "_all_of",
        "_any_of",
        "_branch",
        "_embedded",
        "_enum",
        "_extra",
        "_fast",
        "_has_type",
        "_int_or_string",
        "_items",
        "_list_type",
        "_map_keys",
        "_max_items",
        "_max_length",
        "_max_properties",
        "_maximum",
        "_min_items",
        "_min_length",
        "_minimum",
        "_nodes",
        "_nullable",
        "_object_root",
        "_open",
        "_pattern",
        "_props",
        "_ready",
        "_required",
        "_root",
        "_schema",
        "_strict",
        "_type",
        "_types",
    )

    def __init__(
        self, nodes: dict[_NodeKey, _Node], schema: Mapping[str, Any], root: bool, branch: bool
    ) -> None:
        self._nodes = nodes
        self._schema = schema  # held, so that its id names no other schema while it is cached
        self._root = root
        self._branch = branch
        self._ready = False

    def _read(self) -> None:  # one assignment per keyword check_schema reads
        schema = self._schema
        self._has_type = "type" in schema
        self._type: Any = schema.get("type")
        types: Mapping[Any, tuple[type, ...]] = JSON_TYPES  # a name check_schema reads as it is
        self._types = types.get(self._type, ()) if self._has_type else ()
        self._nullable = bool(schema.get("nullable", False)) or not self._has_type
        self._int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        self._all_of = tuple(self._child(sub, self._root) for sub in schema.get("allOf", ()))
        self._any_of = tuple(
            tuple(_node(self._nodes, b, self._root, True) for b in schema[key])
            for key in ("anyOf", "oneOf")
            if schema.get(key, ())
        )
        self._enum = schema.get("enum", _MISSING)
        self._minimum = schema.get("minimum", _MISSING)
        self._maximum = schema.get("maximum", _MISSING)
        self._max_length = schema.get("maxLength", _MISSING)
        self._min_length = schema.get("minLength", _MISSING)
        self._pattern = schema.get("pattern", _MISSING)
        self._required = tuple(schema.get("required", ()))
        self._max_properties = schema.get("maxProperties", _MISSING)
        props: Mapping[str, Any] = schema.get("properties", {})
        self._props = {key: self._child(sub, False) for key, sub in props.items()}
        extra = schema.get("additionalProperties")
        self._extra = self._child(extra, False) if isinstance(extra, Mapping) else None
        self._embedded = bool(schema.get("x-kubernetes-embedded-resource", False))
        self._object_root = self._root or self._embedded
        self._open = extra is True or bool(
            schema.get("x-kubernetes-preserve-unknown-fields", False)
        )
        self._strict = (bool(props) or extra is False or self._has_type) and not self._branch
        items = schema.get("items")
        self._items = self._child(items, False) if isinstance(items, Mapping) else None
        self._max_items = schema.get("maxItems", _MISSING)
        self._min_items = schema.get("minItems", _MISSING)
        self._list_type = schema.get("x-kubernetes-list-type")
        self._map_keys = tuple(schema.get("x-kubernetes-list-map-keys", ()))
        self._fast = self._shortcuts()
        self._ready = True

    def _shortcuts(self) -> dict[type, Callable[[Any], bool]]:
        """`passes` by the exact type of a decoded JSON value, where its type check (which it
        meets first) is the same for every value of that type: a failed check answers False,
        and a passed one goes straight to the checks of that type when no allOf, anyOf, oneOf
        or enum comes between."""
        direct = not (self._all_of or self._any_of) and self._enum is _MISSING
        fast: dict[type, Callable[[Any], bool]] = {}
        for kind, sample, check in (
            (dict, {}, self._object_passes),
            (list, [], self._array_passes),
            (str, "", self._string_passes),
            (int, 0, self._int_passes),
        ):
            if not self._type_passes(sample):
                fast[kind] = _never
            elif direct:
                fast[kind] = check
        return fast

    def _type_passes(self, value: Any) -> bool:
        """`passes`'s type check for a value that is not None (the same for its whole type)."""
        if self._int_or_string:
            return not isinstance(value, bool) and isinstance(value, int | str)
        if self._has_type:
            if isinstance(value, bool):
                return bool(self._type == "boolean")
            return isinstance(value, self._types)
        return True

    def _child(self, schema: Mapping[str, Any], root: bool) -> _Node:
        return _node(self._nodes, schema, root, self._branch)

    def passes(self, value: Any) -> bool:
        if not self._ready:
            self._read()
        fast = self._fast.get(type(value))
        if fast is not None:
            return fast(value)
        if value is None:
            return self._nullable
        if self._int_or_string:
            if isinstance(value, bool) or not isinstance(value, int | str):
                return False
        elif self._has_type:
            if isinstance(value, bool):
                if self._type != "boolean":
                    return False
            elif not isinstance(value, self._types):
                return False
        for sub in self._all_of:
            if not sub.passes(value):
                return False
        for branches in self._any_of:
            if not any(branch.passes(value) for branch in branches):
                return False
        if self._enum is not _MISSING and value not in self._enum:
            return False
        if isinstance(value, int | float) and not isinstance(value, bool):
            if self._minimum is not _MISSING and value < self._minimum:
                return False
            if self._maximum is not _MISSING and value > self._maximum:
                return False
        if isinstance(value, str):
            return self._string_passes(value)
        if isinstance(value, dict):
            return self._object_passes(value)
        if isinstance(value, list):
            return self._array_passes(value)
        return True

    def _int_passes(self, value: int) -> bool:
        if self._minimum is not _MISSING and value < self._minimum:
            return False
        return not (self._maximum is not _MISSING and value > self._maximum)

    def _string_passes(self, value: str) -> bool:
        if self._max_length is not _MISSING and len(value) > self._max_length:
            return False
        if self._min_length is not _MISSING and len(value) < self._min_length:
            return False
        return self._pattern is _MISSING or pattern_problem(self._pattern, value) is None

    def _object_passes(self, value: dict[Any, Any]) -> bool:
        if self._max_properties is not _MISSING and (
            len(value) > self._max_properties
            or any(isinstance(k, str) and len(k) > MAX_KEY_LENGTH for k in value)
        ):
            return False
        for name in self._required:
            if name not in value:
                return False
        props, extra = self._props, self._extra
        for key, item in value.items():
            if (
                self._object_root
                and key in EMBEDDED_KEYS
                and (key != "metadata" or isinstance(item, dict))
            ):
                continue
            node = props.get(key)
            if node is None:
                node = extra
            if node is not None:
                if not node.passes(item):
                    return False
            elif self._open or (self._embedded and key in EMBEDDED_KEYS):
                continue
            elif self._strict:
                return False
        return True

    def _array_passes(self, value: list[Any]) -> bool:
        if self._max_items is not _MISSING and len(value) > self._max_items:
            return False
        if self._min_items is not _MISSING and len(value) < self._min_items:
            return False
        items = self._items
        if items is not None:
            for item in value:
                if not items.passes(item):
                    return False
        if self._list_type == "map":
            keys = self._map_keys
            if keys:
                seen: set[tuple[str, ...]] = set()
                for item in value:
                    if isinstance(item, dict):
                        key = tuple(repr(item.get(k)) for k in keys)
                        if key in seen:
                            return False
                        seen.add(key)
        elif self._list_type == "set":
            listed: list[Any] = []
            for item in value:
                if item in listed:
                    return False
                listed.append(item)
        return True
