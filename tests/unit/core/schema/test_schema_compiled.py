"""core.schema.compiled.Checker answers exactly as check_schema does, over generated schemas and
values: a value passes exactly when check_schema finds nothing, and a failing value gets
check_schema's own errors. The generated schemas hold every keyword check_schema reads, and the
values are drawn from what those schemas name, so that most of them pass and fail deep down."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.fields.paths import FieldPath
from core.schema.compiled import Checker
from core.schema.structural import check_schema
from tests.support.generated import json_trees

Test = TypeVar("Test", bound=Callable[..., None])
KEYS = ["a", "b", "apiVersion", "kind", "metadata"]
TYPES = ["object"] * 3 + ["array", "string", "integer", "number", "boolean", "other"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 2.0]),
    st.sampled_from(["", "a", "ab", "abc", "b1", "\ud800"]),
)
values = json_trees(scalars, st.sampled_from(KEYS), max_leaves=12)


def _with(
    draw: st.DrawFn, schema: dict[str, Any], key: str, strategy: st.SearchStrategy[Any]
) -> None:
    if draw(st.booleans()):
        schema[key] = draw(strategy)


@st.composite
def schemas(draw: st.DrawFn, depth: int = 3, kind: str | None = None) -> dict[str, Any]:
    """`kind`: the type the schema mostly has (a combinator's branches mostly share their
    node's, an item of a map-type list is mostly an object)."""
    schema: dict[str, Any] = {}
    if kind is not None and draw(st.integers(0, 3)) > 0:
        schema["type"] = kind
    elif draw(st.integers(0, 3)) > 0:
        schema["type"] = draw(st.sampled_from(TYPES))
    if draw(st.integers(0, 5)) == 0:
        schema["x-kubernetes-int-or-string"] = draw(st.booleans())
    _with(draw, schema, "nullable", st.booleans())
    if draw(st.integers(0, 4)) == 0:
        schema["enum"] = draw(st.lists(scalars, max_size=3))
    for key in ("minimum", "maximum"):
        if draw(st.integers(0, 3)) == 0:
            schema[key] = draw(st.integers(-2, 2))
    for key in ("maxLength", "minLength", "maxItems", "minItems"):
        if draw(st.integers(0, 3)) == 0:
            schema[key] = draw(st.integers(0, 3))
    if draw(st.integers(0, 4)) == 0:
        schema["pattern"] = draw(st.sampled_from(["^a", "b$", "[0-9]", "(", "^$"]))
    if draw(st.integers(0, 3)) == 0:
        schema["required"] = draw(st.lists(st.sampled_from(KEYS), max_size=2))
    for key in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        schema["x-kubernetes-list-type"] = draw(st.sampled_from(["map", "set", "atomic"]))
        schema["x-kubernetes-list-map-keys"] = draw(st.lists(st.sampled_from(KEYS), max_size=2))
    if depth > 0:
        child = schemas(depth - 1)
        if draw(st.integers(0, 1)) == 0:
            schema["properties"] = draw(st.dictionaries(st.sampled_from(KEYS), child, max_size=3))
        if draw(st.integers(0, 3)) == 0:
            schema["additionalProperties"] = draw(st.one_of(st.booleans(), child))
        if draw(st.integers(0, 2)) == 0 or "x-kubernetes-list-type" in schema:
            schema["items"] = draw(schemas(depth - 1, "object"))
        for key in ("allOf", "anyOf", "oneOf"):
            if draw(st.integers(0, 4)) == 0:
                schema[key] = draw(st.lists(schemas(depth - 1, schema.get("type")), max_size=2))
    return schema


@st.composite
def fitting(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A value shaped as `schema` says at every level, now and then one that is not."""
    if draw(st.integers(0, 15)) == 0:
        return draw(values)
    kind = schema.get("type", "object" if "properties" in schema else None)
    if schema.get("x-kubernetes-int-or-string"):
        kind = draw(st.sampled_from(["integer", "string"]))
    if kind == "object":
        props = schema.get("properties", {})
        named = sorted(set(props) | set(schema.get("required", ()))) or KEYS
        keys = draw(st.lists(st.sampled_from(named), max_size=4, unique=True))
        keys += [k for k in schema.get("required", ()) if k not in keys]
        if draw(st.integers(0, 2)) == 0:  # one the schema may not declare
            keys += [k for k in [draw(st.sampled_from(KEYS))] if k not in keys]
        extra = schema.get("additionalProperties")
        return {
            key: draw(
                fitting(props[key] if key in props else extra if isinstance(extra, dict) else {})
            )
            for key in keys
        }
    if kind == "array" or (kind is None and "items" in schema):
        items: dict[str, Any] = schema["items"] if isinstance(schema.get("items"), dict) else {}
        return draw(st.lists(fitting(items), max_size=3))
    strategy = {
        "string": st.sampled_from(["", "a", "ab", "abc", "b1"]),
        "integer": st.integers(-3, 3),
        "number": st.sampled_from([0.5, 2, -1]),
        "boolean": st.booleans(),
    }.get(str(kind), values)
    return draw(strategy)


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(schemas())
    return schema, draw(fitting(schema))


_EMBEDDING = {
    "type": "object",
    "properties": {
        "t": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"b": {}}}
    },
}
_MAP = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["a"],
    "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
# Each rule of check_schema a generated pair may seldom meet, as (schema, value): both at the root
# and not.
EXAMPLES: list[tuple[dict[str, Any], Any]] = [
    ({"anyOf": [{"properties": {"a": {}}}]}, {"b": 1}),  # a branch declares no fields
    ({"anyOf": [{"type": "object", "required": ["a"]}]}, {"b": 1}),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, 1.5),
    ({"properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}]}, {"a": 1}),
    (_EMBEDDING, {"t": {"apiVersion": "v1", "kind": "K", "metadata": {}, "b": 1}}),
    (_EMBEDDING, {"t": {"metadata": "not a map"}}),
    (_EMBEDDING, {"t": {"c": 1}}),
    ({"type": "object", "properties": {"spec": {}}}, {"apiVersion": "v1", "metadata": {}}),
    ({"type": "object", "properties": {"spec": {}}}, {"metadata": "not a map"}),
    (_MAP, [{"a": 1}, {"a": 1}]),
    (_MAP, [{"a": 1}, {"a": 2}]),
    (_MAP, [{"b": 1}, {"b": 2}]),  # both lack the key: the same key (None)
    (_MAP, [{"a": 1}, {"a": 1.0}]),  # repr tells 1 and 1.0 apart
    ({"type": "array", "x-kubernetes-list-type": "set"}, [1, 1.0]),
    ({"type": "array", "x-kubernetes-list-type": "set"}, [1, True]),
    ({"type": "array", "x-kubernetes-list-type": "set"}, [[1], [2]]),
    ({"type": "string"}, None),
    ({"type": "string", "nullable": True}, None),
    ({}, None),
    ({"type": "integer"}, True),
    ({"type": "number"}, 1),
    ({"x-kubernetes-int-or-string": True}, True),
    ({"x-kubernetes-int-or-string": True, "type": "object"}, "a"),
    ({"type": "string", "pattern": "("}, "a"),
    ({"type": "string", "pattern": "^.$"}, "\ud800"),
    ({"enum": [1]}, True),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {"z": {"y": 1}}),
    ({"additionalProperties": False}, {"a": 1}),
    ({"additionalProperties": True, "type": "object"}, {"a": 1}),
    ({"additionalProperties": {"type": "integer"}}, {"a": 1, "b": "x"}),
    ({"type": "array", "maxItems": 1, "items": {"maximum": 2}}, [3]),
    ({"type": "string", "minLength": 2}, "a"),
]


def _examples(cases: list[tuple[dict[str, Any], Any]]) -> Callable[[Test], Test]:
    """Each case as an explicit example of the test, at the root and not."""

    def add(test: Test) -> Test:
        for case in cases:
            for at in (FieldPath(), FieldPath.root("spec")):
                test = example(case, at)(test)
        return test

    return add


def _same(schema: dict[str, Any], value: Any, at: FieldPath) -> None:
    checker = Checker(schema)
    expected = check_schema(value, schema, at)
    assert checker.passes(value, root=not at.parts) == (expected == [])
    assert checker.errors(value, at) == expected


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value(), st.sampled_from([FieldPath(), FieldPath.root("spec")]))
@_examples(EXAMPLES)
def test_a_checker_answers_as_check_schema(pair: tuple[dict[str, Any], Any], at: FieldPath) -> None:
    _same(*pair, at)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_one_checker_answers_every_value_as_check_schema(data: st.DataObject) -> None:
    """The nodes a checker reads for one value answer the next ones too (at the root and not)."""
    schema = data.draw(schemas())
    checker = Checker(schema)
    for value in data.draw(st.lists(fitting(schema), min_size=2, max_size=5)):
        for at in (FieldPath(), FieldPath.root("spec")):
            expected = check_schema(value, schema, at)
            assert checker.passes(value, root=not at.parts) == (expected == [])
            assert checker.errors(value, at) == expected


def test_a_passing_and_a_failing_value() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "array", "items": {"type": "string", "pattern": "^a"}}},
    }
    checker = Checker(schema)
    assert checker.errors({"a": ["ab", "a"]}, FieldPath.root("spec")) == []
    assert [e.path for e in checker.errors({"a": ["ab", "b"], "c": 1}, FieldPath.root("spec"))] == [
        "spec.a[1]",
        "spec.c",
    ]
    assert checker.passes({"apiVersion": "v1", "a": []}, root=True)
    assert not checker.passes({"apiVersion": "v1", "a": []}, root=False)


def test_a_schema_shared_a_billion_ways_or_holding_itself_is_read_once_per_node() -> None:
    """A CRD's YAML anchors may make one schema node stand in a billion places (2^30 paths
    here), or inside itself (`&a` under `*a`): a checker reads each node once, along the
    value, and answers as check_schema does."""
    shared: dict[str, Any] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    for _ in range(30):
        shared = {"type": "object", "properties": {"a": shared, "b": shared}}
    looped: dict[str, Any] = {"type": "object", "properties": {}}
    looped["properties"]["child"] = looped
    deep: dict[str, Any] = {}
    for _ in range(60):
        deep = {"child": deep}
    cases = [
        (shared, {"a": {"b": {"a": {}}}}),
        (shared, {"a": {"b": {"c": 1}}}),
        (looped, deep),
        (looped, {"child": {"child": {"other": 1}}}),
    ]
    for schema, value in cases:
        checker = Checker(schema)
        assert checker.errors(value, FieldPath.root("spec")) == check_schema(
            value, schema, FieldPath.root("spec")
        )
    assert [e.path for e in Checker(looped).errors(cases[3][1], FieldPath.root("spec"))] == [
        "spec.child.child.other"
    ]
