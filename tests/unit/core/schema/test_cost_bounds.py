"""Every cost bounded by declared sizes (issue #40, items 3 and 10).

- Every string, list and map of a ModelDeployment spec that rules or checks read has a bound in
  the CRD schema, and admission refuses a value past it by field path before any rule runs.
- The rule cost estimate takes each field at its declared bound, and a lookup costs its key's
  length (the issue's triple loop over `spec.engine.args[spec.model.id]`).
- "Did you mean" suggestions are bounded in count and word length, and so is the answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.cel.cost import EVALUATION, TRAVERSAL
from core.cel.rules import RULE_COST_LIMIT, compile_rule, new_environment
from core.checks.flags import LISTED_UNKNOWN
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.crds import model_deployment_spec
from core.schema.structural import MAX_KEY_LENGTH, check_schema
from core.schema.suggest import MAX_SUGGESTIONS, MAX_WORD
from core.selection.configs import ProviderRegistry
from tests.fuzzing.cel import INDEX_RULES, KEYS, lookup_rule
from tests.support.builders import model_deployment

ENV = new_environment()
L20 = "[" + ", ".join(str(i) for i in range(20)) + "]"


def _bounded(
    schema: Mapping[str, Any], at: FieldPath
) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    """Every schema node under `schema` that declares maxLength, maxItems or maxProperties, with
    the path of its first occurrence (a list's first item, a map's key "k")."""
    if any(k in schema for k in ("maxLength", "maxItems", "maxProperties")):
        yield at, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _bounded(sub, at.child(name))
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from _bounded(extra, at.child("k"))  # as structural names a map entry
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _bounded(items, at.index(0))


def _unbounded(schema: Mapping[str, Any], at: FieldPath) -> Iterator[str]:
    """Paths of strings, lists and maps without a bound (enums and preserved fields excepted)."""
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema and "enum" not in schema:
        yield str(at)
    if kind == "array" and "maxItems" not in schema:
        yield str(at)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping) and "maxProperties" not in schema:
        yield str(at)
    for name, sub in (schema.get("properties") or {}).items():
        yield from _unbounded(sub, at.child(name))
    if isinstance(extra, Mapping):
        yield from _unbounded(extra, at.key("k"))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _unbounded(items, at.index(0))


SPEC = FieldPath.root("spec")
BOUNDED = [(str(at), node) for at, node in _bounded(model_deployment_spec(), SPEC)]


def test_every_string_list_and_map_a_rule_can_read_has_a_declared_bound() -> None:
    # Quantities (int-or-string, pattern-checked) and provider.overrides (any shape, checked
    # against the upstream schema) are taken at CEL's input limits by the estimate instead.
    assert list(_unbounded(model_deployment_spec(), SPEC)) == []


def _minimal(schema: Mapping[str, Any], i: int) -> Any:
    """A small valid value of `schema`, the i-th of its kind (list-map keys differ)."""
    if schema.get("type") == "object":
        props = schema.get("properties") or {}
        return {name: _minimal(props[name], i) for name in schema.get("required", ())}
    if schema.get("type") == "string":
        return f"a{i}"
    return 1


def _place(schema: Mapping[str, Any], parts: list[Any], value: Any) -> Any:
    """A minimal valid value of `schema` that holds `value` at `parts`."""
    if not parts:
        return value
    part, rest = parts[0], parts[1:]
    if isinstance(part, int):
        return [_place(schema["items"], rest, value)]
    sub = (schema.get("properties") or {}).get(part) or schema["additionalProperties"]
    return {**_minimal(schema, 0), part: _place(sub, rest, value)}


def _one_past(node: Mapping[str, Any]) -> tuple[Any, Reason, str]:
    if "maxLength" in node:
        n = node["maxLength"]
        return "a" * (n + 1), Reason.TOO_LONG, f"may not be longer than {n}"
    if "maxItems" in node:
        n = node["maxItems"]
        items = [_minimal(node["items"], i) for i in range(n + 1)]
        return items, Reason.TOO_MANY, f"must have at most {n} items"
    n = node["maxProperties"]
    entries = {f"k{i}": _minimal(node["additionalProperties"], i) for i in range(n + 1)}
    return entries, Reason.TOO_MANY, f"must have at most {n} entries"


@pytest.mark.parametrize(("path", "node"), BOUNDED, ids=[p for p, _ in BOUNDED])
def test_a_value_one_past_its_bound_is_refused_by_path_before_any_rule_runs(
    path: str, node: Mapping[str, Any], shipped: ProviderRegistry
) -> None:
    obj = model_deployment()  # no engine, no provider: selection would run the rules
    value, reason, detail = _one_past(node)
    obj["spec"] = _place(model_deployment_spec(), _parts(path)[1:], value)
    obj["spec"].setdefault("model", {"id": "org/model"})

    admission = admit(obj, registry=shipped)

    assert (admission.allowed, admission.errors) == (False, (FieldError(path, reason, detail),))
    assert admission.hydration.structural  # nothing after the structure check ran
    assert admission.hydration.engine is None


def _parts(path: str) -> list[Any]:
    """FieldPath parts of a path _bounded printed: `spec.env[0].value`, `spec.engine.args[k]`."""
    for at, _ in _bounded(model_deployment_spec(), SPEC):
        if str(at) == path:
            return [p if isinstance(p, int) else str(p) for p in at.parts]
    raise AssertionError(path)


def test_a_map_key_past_the_qualified_key_length_is_refused() -> None:
    schema = model_deployment_spec()
    spec = {"model": {"id": "m"}, "nodeSelector": {"k" * (MAX_KEY_LENGTH + 1): "v"}}

    assert check_schema(spec, schema, SPEC) == [
        FieldError(
            "spec.nodeSelector",
            Reason.TOO_LONG,
            f"keys may not be longer than {MAX_KEY_LENGTH} characters",
        )
    ]


def test_the_issues_triple_loop_lookup_is_refused_by_its_estimate() -> None:
    condition = f"{L20}.all(a, {L20}.all(b, {L20}.all(c, spec.engine.args[spec.model.id] == 1)))"

    rule = compile_rule(ENV, condition, 0)

    assert rule.compile_error == (
        "estimated cost 352,041 exceeds the limit of 150,000 per rule (loops multiply: iterate "
        "fewer or smaller lists, do not grow strings or lists)"
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=INDEX_RULES)
def test_a_lookup_costs_at_least_its_keys_declared_length_per_iteration(
    parts: tuple[str, str, list[int]],
) -> None:
    key, form, loops = parts
    rule = compile_rule(ENV, lookup_rule(key, form, loops), 0)

    lookups = math.prod(loops)  # at least one lookup with a key of at least KEYS[key] per step
    floor = EVALUATION + lookups * math.ceil(KEYS[key] * TRAVERSAL)
    if rule.program is None:
        assert (rule.compile_error or "").startswith("estimated cost")
        assert rule.cost > RULE_COST_LIMIT
    else:
        assert rule.cost >= floor


def _flags_md(args: int, extra: int) -> dict[str, Any]:
    engine = {
        "type": "vllm",
        "args": {f"max-model-lenx{i:05d}": "1" for i in range(args)},
        "extraArgs": [f"--max-num-seqz{i:05d}" for i in range(extra)],
    }
    return model_deployment(gpu=1, provider="vllm", engine=engine)


def _flag_error(i: int, at: str, flag: str, near: str) -> FieldError:
    hint = f"; did you mean {near}?" if i < MAX_SUGGESTIONS else ""
    return FieldError(at, Reason.INVALID, f"{flag} is not a flag of vllm 0.33.0{hint}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.integers(0, 60), extra=st.integers(0, 60))
def test_unknown_flags_get_few_suggestions_and_one_error_for_the_rest(
    args: int, extra: int, shipped: ProviderRegistry
) -> None:
    admission = admit(_flags_md(args, extra), registry=shipped)

    unknown = [
        (f"spec.engine.args[max-model-lenx{i:05d}]", f"--max-model-lenx{i:05d}", "--max-model-len")
        for i in range(args)
    ] + [
        (f"spec.engine.extraArgs[{i}]", f"--max-num-seqz{i:05d}", "--max-num-seqs")
        for i in range(extra)
    ]
    expected = [_flag_error(i, *u) for i, u in enumerate(unknown[:LISTED_UNKNOWN])]
    if len(unknown) > LISTED_UNKNOWN:
        rest = len(unknown) - LISTED_UNKNOWN
        detail = (
            f"{rest} more flags are not flags of vllm 0.33.0 (only the first {LISTED_UNKNOWN} "
            "are named)"
        )
        expected.append(FieldError("spec.engine", Reason.INVALID, detail))
    assert list(admission.errors) == expected


@settings(max_examples=25, deadline=None)
@given(count=st.integers(0, 40), long=st.booleans())
def test_unknown_fields_get_at_most_a_few_suggestions_and_none_for_long_names(
    count: int, long: bool
) -> None:
    schema = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    stem = "replicas" + "x" * (MAX_WORD - 8) if long else "replicas"
    value = {f"{stem}{i:03d}": 1 for i in range(count)}

    errors = check_schema(value, schema, SPEC)

    def detail(i: int) -> str:
        near = i < MAX_SUGGESTIONS and not long
        return "not declared in the schema" + (' (did you mean "replicas"?)' if near else "")

    assert errors == [
        FieldError(f"spec.{stem}{i:03d}", Reason.UNKNOWN_FIELD, detail(i)) for i in range(count)
    ]
