"""CRD x-kubernetes-validations rules evaluated as the API server evaluates them (the real API
server judges every rule of the pack in tests/e2e/test_crd_rules.py; these pin the semantics
one at a time, offline)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import FieldError, Reason
from core.schema.rules import (
    MAX_EVALUATIONS,
    Node,
    apply_defaults,
    compile_crd_schema,
    escape,
    new_environment,
    rules_of,
    validate,
)
from renderer.output.schemapack import load_pack
from tests.support.crdcases import cases

ENV = new_environment()


def obj_schema(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def rule(text: str, message: str = "", **extra: Any) -> dict[str, Any]:
    return {"rule": text, **({"message": message} if message else {}), **extra}


def root(spec: dict[str, Any]) -> dict[str, Any]:
    return obj_schema({"spec": spec})


def errors(schema: dict[str, Any], spec: Any, old: Any = None) -> list[FieldError]:
    node = compile_crd_schema(root(schema), ENV)
    return validate({"spec": spec}, node, old=None if old is None else {"spec": old})


def test_a_rule_runs_with_self_bound_to_its_node_and_reports_the_message_there() -> None:
    schema = obj_schema(
        {"a": {"type": "integer"}, "b": {"type": "integer"}},
        **{"x-kubernetes-validations": [rule("self.a <= self.b", "a must not exceed b")]},
    )

    assert errors(schema, {"a": 1, "b": 2}) == []
    assert errors(schema, {"a": 3, "b": 2}) == [
        FieldError("spec", Reason.INVALID, "a must not exceed b")
    ]


def test_a_scalar_node_quotes_its_value_as_the_api_server_does() -> None:
    schema = obj_schema(
        {"t": {"type": "string", "x-kubernetes-validations": [rule("self != 'x'", "not x")]}}
    )

    assert [str(e) for e in errors(schema, {"t": "x"})] == ['spec.t: Invalid value: "x": not x']


def test_a_rule_without_a_message_names_the_rule() -> None:
    schema = obj_schema({"n": {"type": "integer", "x-kubernetes-validations": [rule("self > 1")]}})

    assert [str(e) for e in errors(schema, {"n": 1})] == [
        "spec.n: Invalid value: 1: failed rule: self > 1"
    ]


def test_rules_under_items_and_additional_properties_run_per_element_with_its_path() -> None:
    positive = {"type": "integer", "x-kubernetes-validations": [rule("self > 0", "positive")]}
    schema = obj_schema(
        {
            "list": {"type": "array", "items": positive},
            "map": {"type": "object", "additionalProperties": positive},
        }
    )

    found = errors(schema, {"list": [1, 0, 2, -1], "map": {"b": 0, "a": 1, "c.d": -2}})

    assert [str(e) for e in found] == [
        "spec.list[1]: Invalid value: 0: positive",
        "spec.list[3]: Invalid value: -1: positive",
        "spec.map[b]: Invalid value: 0: positive",
        "spec.map[c.d]: Invalid value: -2: positive",
    ]


def test_a_rule_at_a_node_absent_from_the_object_does_not_run() -> None:
    schema = obj_schema(
        {"t": {"type": "object", "x-kubernetes-validations": [rule("false", "never")]}}
    )

    assert errors(schema, {}) == []
    assert errors(schema, {"t": None}) == []
    assert [str(e) for e in errors(schema, {"t": {}})] == ["spec.t: Invalid value: never"]


def test_defaults_are_applied_before_the_rules_see_the_object() -> None:
    ref = obj_schema(
        {
            "group": {"type": "string", "default": ""},
            "kind": {"type": "string", "default": "Service"},
            "port": {"type": "integer"},
        },
        **{
            "x-kubernetes-validations": [
                rule(
                    "(size(self.group) == 0 && self.kind == 'Service') ? has(self.port) : true",
                    "port",
                )
            ]
        },
    )
    schema = obj_schema({"ref": ref})

    assert [str(e) for e in errors(schema, {"ref": {}})] == ["spec.ref: Invalid value: port"]
    assert errors(schema, {"ref": {"kind": "Other"}}) == []
    assert apply_defaults({"ref": {}}, schema) == {"ref": {"group": "", "kind": "Service"}}


def test_a_defaulted_child_holding_rules_is_checked() -> None:
    inner = obj_schema(
        {"n": {"type": "integer", "default": 0}},
        default={},
        **{"x-kubernetes-validations": [rule("self.n > 0", "n > 0")]},
    )

    assert [str(e) for e in errors(obj_schema({"inner": inner}), {})] == [
        "spec.inner: Invalid value: n > 0"
    ]


@pytest.mark.parametrize(
    ("name", "escaped"),
    [
        ("namespace", "__namespace__"),
        ("in", "__in__"),
        ("a.b", "a__dot__b"),
        ("a-b", "a__dash__b"),
        ("a/b", "a__slash__b"),
        ("a__b", "a__underscores__b"),
        ("plain", "plain"),
        ("1abc", None),
        ("a b", None),
        ("", None),
    ],
    ids=repr,
)
def test_property_names_are_escaped_as_kubernetes_escapes_them(
    name: str, escaped: str | None
) -> None:
    assert escape(name) == escaped


def test_a_reserved_property_name_is_read_escaped() -> None:
    schema = obj_schema(
        {"namespace": {"type": "string"}},
        **{"x-kubernetes-validations": [rule("self.__namespace__ != 'kube-system'", "no")]},
    )

    assert errors(schema, {"namespace": "models"}) == []
    assert [str(e) for e in errors(schema, {"namespace": "kube-system"})] == [
        "spec: Invalid value: no"
    ]


def test_a_transition_rule_runs_only_against_an_old_value() -> None:
    schema = obj_schema(
        {
            "m": {
                "type": "string",
                "x-kubernetes-validations": [rule("self == oldSelf", "immutable")],
            }
        }
    )

    assert errors(schema, {"m": "b"}) == []  # a create, or a render: nothing to compare
    assert errors(schema, {"m": "a"}, old={"m": "a"}) == []
    assert [str(e) for e in errors(schema, {"m": "b"}, old={"m": "a"})] == [
        'spec.m: Invalid value: "b": immutable'
    ]
    assert errors(schema, {"m": "b"}, old={}) == []  # no old value at this node


def test_message_expression_field_path_and_reason_shape_the_error() -> None:
    schema = obj_schema(
        {"a": {"type": "integer"}},
        **{
            "x-kubernetes-validations": [
                rule(
                    "self.a < 3",
                    "static",
                    messageExpression="'a is ' + string(self.a)",
                    fieldPath=".a",
                    reason="FieldValueForbidden",
                )
            ]
        },
    )

    assert errors(schema, {"a": 5}) == [FieldError("spec.a", Reason.FORBIDDEN, "a is 5")]


def test_an_evaluation_error_refuses_the_object_naming_the_rule() -> None:
    schema = obj_schema(
        {"a": {"type": "object"}},
        **{"x-kubernetes-validations": [rule("self.a.b == 1", "b is one")]},
    )

    assert errors(schema, {"a": {"b": 1}}) == []
    assert [(e.path, e.detail) for e in errors(schema, {"a": {}})] == [
        ("spec", '"object": NOT_FOUND: Key not found in map : "b" evaluating rule: b is one')
    ]


def test_a_rule_that_does_not_compile_refuses_every_object_reaching_it() -> None:
    schema = obj_schema({}, **{"x-kubernetes-validations": [rule("isURL(self.x)", "url")]})

    (found,) = errors(schema, {"x": "https://example.com"})

    assert (found.path, found.reason) == ("spec", Reason.INVALID)
    assert found.detail.startswith('"object": rule compile error: ')


def test_past_the_evaluation_budget_the_object_is_refused_once() -> None:
    item = {"type": "integer", "x-kubernetes-validations": [rule("self >= 0", "non-negative")]}
    schema = obj_schema({"list": {"type": "array", "items": item}})

    found = errors(schema, {"list": list(range(MAX_EVALUATIONS + 5))})

    assert [str(e) for e in found] == [
        f"spec.list[{MAX_EVALUATIONS}]: Invalid value: "
        '"integer": validation failed due to running out of cost budget, '
        "no further validation rules will be run"
    ]


def test_a_loop_past_the_runtime_budget_is_an_error_not_a_hang() -> None:
    loop = "self.all(a, self.all(b, self.all(c, a + b + c >= 0)))"
    schema = obj_schema(
        {"l": {"type": "array", "items": {"type": "integer"}}},
        **{"x-kubernetes-validations": [rule(loop, "loops")]},
    )

    (found,) = errors(schema, {"l": list(range(100))})

    assert found.path == "spec"
    assert "evaluating rule: loops" in found.detail


@pytest.mark.parametrize(
    "value", [2**63, -(2**63) - 1, 10**5000, b"bytes"], ids=["int64+1", "int64-1", "huge", "bytes"]
)
def test_a_value_cel_cannot_hold_is_reported_and_never_reaches_the_runtime(value: Any) -> None:
    schema = obj_schema(
        {"x": {"type": "integer"}}, **{"x-kubernetes-validations": [rule("self.x > 0", "x > 0")]}
    )

    found = [(e.path, e.detail) for e in errors(schema, {"x": value})]

    if isinstance(value, bytes):
        assert found == [
            ("spec", '"object": a bytes is not a JSON value and cannot be evaluated by the rules')
        ]
        return
    shown = value if value < 10**70 else "an integer of over 77 digits"
    assert found == [
        ("spec", '"object": an integer outside the 64-bit range cannot be evaluated by the rules'),
        ("spec.x", f"in body must be of type int64: {shown}"),
    ]


def test_every_rule_of_the_pack_compiles() -> None:
    compiled = [
        (entry.file, str(at), r.problem)
        for entry in load_pack()
        for version in entry.crd["spec"]["versions"]
        for at, r in rules_of(compile_crd_schema(version["schema"]["openAPIV3Schema"], ENV))
    ]

    assert len(compiled) == 341
    assert [c for c in compiled if c[2] is not None] == []


CASES = cases()


@pytest.fixture(scope="module")
def pack_rules() -> dict[tuple[str, str, str], Node | None]:
    """Every served version of the pack, compiled once for the module."""
    return {
        (e.crd["spec"]["group"], e.crd["spec"]["names"]["kind"], v["name"]): compile_crd_schema(
            v["schema"]["openAPIV3Schema"], ENV
        )
        for e in load_pack()
        for v in e.crd["spec"]["versions"]
    }


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_the_pack_rule_judges_its_differential_case(
    index: int, pack_rules: dict[tuple[str, str, str], Node | None]
) -> None:
    case = CASES[index]
    node = pack_rules[(case.group, case.kind, case.version)]

    found = [str(e) for e in validate(case.obj, node, old=case.old)]

    if case.passes:  # (a blocked case fails the rule too; the schema error is strict.py's)
        assert [f for f in found if f.endswith(case.message)] == []
    else:
        assert [f for f in found if f.endswith(case.message)] != []


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**63, -(2**63) - 1, 10**40])  # past int64 (10**5000: test above)
    | st.floats()
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(spec=JSON)
def test_any_value_under_the_httproute_rules_gets_field_errors_never_an_exception(
    spec: Any, pack_rules: dict[tuple[str, str, str], Node | None]
) -> None:
    """Hostile input (wrong types, huge integers, odd keys) under every rule of HTTPRoute."""
    node = pack_rules[("gateway.networking.k8s.io", "HTTPRoute", "v1")]

    found = validate({"spec": {"rules": [spec], "parentRefs": spec}}, node)

    assert all(isinstance(e, FieldError) and e.path.startswith("spec") for e in found)
