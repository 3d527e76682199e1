"""The structural check that stands in for the API server (and, later, for upstream CRDs)."""

from __future__ import annotations

from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.structural import check_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0, "maximum": 8},
        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "size": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "note": {"type": "string", "nullable": True},
        "items": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
            },
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key"],
        },
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object"}},
        },
    },
}


def check(value: Any) -> list[tuple[str, Reason, str]]:
    return [
        (e.path, e.reason, e.detail) for e in check_schema(value, SCHEMA, FieldPath.root("spec"))
    ]


def test_valid_value_passes() -> None:
    value = {
        "count": 8,
        "name": "abc",
        "mode": "a",
        "size": "10Gi",
        "labels": {"x": "y"},
        "free": {"any": {"thing": [1]}},
        "note": None,
        "items": [{"key": "a"}, {"key": "b"}],
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
    }

    assert check(value) == []


def test_unknown_fields_are_named_with_a_suggestion() -> None:
    assert check({"cuont": 1, "zzz": 2}) == [
        ("spec.cuont", Reason.UNKNOWN_FIELD, 'not declared in the schema (did you mean "count"?)'),
        ("spec.zzz", Reason.UNKNOWN_FIELD, "not declared in the schema"),
    ]


def test_types_ranges_lengths_patterns_and_enums() -> None:
    assert check(
        {"count": 9, "name": "ABCDEF", "mode": "c", "size": 1.5, "labels": {"x": 1}, "note": 3}
    ) == [
        ("spec.count", Reason.INVALID, "must be <= 8"),
        ("spec.name", Reason.TOO_LONG, "may not be longer than 5"),
        ("spec.name", Reason.INVALID, "must match the pattern ^[a-z]+$"),
        ("spec.mode", Reason.UNSUPPORTED, 'supported values: "a", "b"'),
        ("spec.size", Reason.INVALID, "must be an integer or a string"),
        ("spec.labels.x", Reason.INVALID, "must be string, not integer"),
        ("spec.note", Reason.INVALID, "must be string, not integer"),
    ]


def test_booleans_are_not_integers() -> None:
    assert check({"count": True}) == [
        ("spec.count", Reason.INVALID, "must be integer, not boolean")
    ]


def test_null_only_where_nullable() -> None:
    assert check({"count": None}) == [("spec.count", Reason.INVALID, "must be integer, not null")]


def test_arrays_items_required_keys_and_duplicates() -> None:
    assert check({"items": [{"key": "a"}, {"key": "a"}, {}]}) == [
        ("spec.items", Reason.TOO_MANY, "must have at most 2 items"),
        ("spec.items[2].key", Reason.REQUIRED, "required field is missing"),
        ("spec.items[1].key", Reason.DUPLICATE, '"a"'),
    ]


def test_embedded_resource_allows_only_its_own_header_fields() -> None:
    assert check({"template": {"kind": "Pod", "spec": {}, "extra": 1}}) == [
        ("spec.template.extra", Reason.UNKNOWN_FIELD, "not declared in the schema"),
    ]


def test_object_without_properties_prunes_everything() -> None:
    errors = check_schema({"a": 1}, {"type": "object"}, FieldPath.root("x"))

    assert errors == [FieldError("x.a", Reason.UNKNOWN_FIELD, "not declared in the schema")]


def _pattern_errors(pattern: str, value: str) -> list[tuple[str, str]]:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    return [(e.path, e.detail) for e in check_schema({"v": value}, schema, FieldPath.root("spec"))]


def test_patterns_match_as_go_regexp_does() -> None:
    # Go's `$` (no multi-line flag) is the end of the text; Python's re also matched before a
    # final newline, so "a\n" passed a check the API server fails.
    assert [
        _pattern_errors("^a$", "a"),
        _pattern_errors("^a$", "a\n"),
        _pattern_errors(r"^\pL+$", "héllo"),
        _pattern_errors("^a+$", "a\ud800"),
    ] == [
        [],
        [("spec.v", "must match the pattern ^a$")],
        [],
        [("spec.v", "must match the pattern ^a+$")],
    ]


def test_a_pattern_outside_re2_is_a_schema_error_not_a_crash() -> None:
    assert _pattern_errors(r"^(a)\1$", "aa") == [
        ("spec.v", r"the schema's pattern ^(a)\1$ is not an RE2 (Go) regular expression")
    ]


def test_a_pattern_python_would_backtrack_on_is_answered() -> None:
    # (a*)*b over 30,000 a's: exponential for a backtracking engine (this test would not end),
    # linear in RE2, which is what the API server runs.
    assert _pattern_errors("^(a*)*b$", "a" * 30_000) == [
        ("spec.v", "must match the pattern ^(a*)*b$")
    ]
