"""CEL on cel-expr-python: semantics that differ from cel-python, input limits, the cost bound."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.admission.hydrate import hydrate
from core.cel.cost import INPUT_ENTRY_LIMIT, INPUT_STRING_LIMIT
from core.cel.rules import (
    CONFIG_COST_LIMIT,
    RULE_COST_LIMIT,
    RuleResult,
    activation,
    compile_rule,
    evaluate,
    new_environment,
)
from core.model.kinds import ModelDeployment
from core.model.numbers import INT64_MAX, INT64_MIN
from core.selection import configs
from core.selection.choice import Decision, rank_providers, select_engine, select_provider
from core.selection.configs import MAX_RULES, ProviderRegistry
from tests.support.builders import model_deployment, provider_config, registry_of, shipped_registry
from tests.support.generated import json_trees

ENV = new_environment()  # immutable after construction; building one costs about 1 ms
L10 = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"


def outcome(condition: str, spec: dict[str, Any]) -> RuleResult:
    rule = compile_rule(ENV, condition, 0)
    return evaluate(rule, activation(ENV, spec))


# --- Semantic differences from cel-python 0.5.0 (docs/admission.md, "CEL semantics") -------------------


def test_has_on_a_missing_parent_is_an_error_not_false() -> None:
    # cel-python answered false; cel-go and cel-expr-python raise "no such key".
    assert outcome("has(spec.resources.gpu)", {}) == RuleResult(
        False, 'NOT_FOUND: Key not found in map : "resources"'
    )
    assert outcome("has(spec.resources.gpu)", {"resources": {}}) == RuleResult(False)


def test_guarded_has_means_the_same_as_before() -> None:
    rule = "!has(spec.resources) || !has(spec.resources.gpu) || spec.resources.gpu.count == 0"
    assert outcome(rule, {}) == RuleResult(True)
    assert outcome(rule, {"resources": {"gpu": {"count": 1}}}) == RuleResult(False)


def test_int_compared_with_a_double_is_compared_not_an_error() -> None:
    # cel-python: "no matching overload" error; cel-go/Kubernetes compare numerically.
    assert outcome("spec.n > 1.5", {"n": 2}) == RuleResult(True)


def test_undeclared_names_and_static_type_errors_are_refused_when_compiled() -> None:
    # cel-python had no type checker: these compiled and failed at every evaluation.
    assert compile_rule(ENV, "foo == 1", 0).compile_error == (
        "line 1, column 1: undeclared reference to 'foo' (in container '')"
    )
    assert compile_rule(ENV, "size(spec) == 'a'", 0).compile_error == (
        "line 1, column 12: found no matching overload for '_==_' applied to '(int, string)'"
    )
    assert compile_rule(ENV, "1 + 2", 0).compile_error == "evaluates to int, not a bool"


def test_runtime_errors_and_budget_overruns_are_non_matches_with_a_reason() -> None:
    assert outcome("1 / spec.n == 1", {"n": 0}) == RuleResult(
        False, "INVALID_ARGUMENT: divide by zero"
    )
    # Four levels over ten items estimate under the limit (accepted) but run 11,110 steps.
    deep = f"{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, true))))"
    assert outcome(deep, {}) == RuleResult(
        False, "iteration budget exceeded (the runtime stops a rule after 10,000 loop steps)"
    )


# --- The input: what a rule can see of `spec` -------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            {"o": {"n": 2**63}},
            "spec.o.n: integer outside the 64-bit range CEL (and Kubernetes) can hold",
        ),
        (
            {"o": [1, -(2**63) - 1]},
            "spec.o[1]: integer outside the 64-bit range CEL (and Kubernetes) can hold",
        ),
        ({"o": 10**5000}, "spec.o: integer outside the 64-bit range CEL (and Kubernetes) can hold"),
        ({"d": datetime.date(2024, 1, 1)}, "spec.d: a date is not a JSON value (quote it in YAML)"),
        ({"s": "x" * (INPUT_STRING_LIMIT + 1)}, "spec.s: string longer than 65,536 characters"),
        ({"l": [0] * (INPUT_ENTRY_LIMIT + 1)}, "spec.l: more than 10,000 entries"),
    ],
    ids=["above-int64", "below-int64", "5000-digits", "yaml-date", "long-string", "long-list"],
)
def test_a_spec_cel_cannot_hold_makes_rules_that_read_it_errors_with_the_field(
    spec: dict[str, Any], reason: str
) -> None:
    # 10**5000 crashed the process inside cel-expr-python (segmentation fault) if passed on.
    (field,) = spec
    obj = {"engine": {"type": "vllm"}} | spec
    error = RuleResult(False, f"spec cannot be given to CEL: {reason}")

    assert outcome(f"has(spec.{field})", obj) == error
    assert outcome("size(spec) == 2", obj) == error  # reads all of spec
    assert outcome("spec.engine.type == 'vllm'", obj) == RuleResult(True)  # the field is not read
    assert outcome("true", obj) == RuleResult(True)  # a rule that does not read spec still runs


def test_input_at_the_limits_is_accepted() -> None:
    spec = {"n": INT64_MAX, "m": INT64_MIN, "s": "x" * INPUT_STRING_LIMIT, "l": [0] * 10}
    assert outcome("spec.n > 0 && spec.m < 0 && size(spec.s) == 65536", spec) == RuleResult(True)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)
_rules = st.tuples(
    st.sampled_from(["a", "b"]),
    st.sampled_from(["==", "<", ">=", "!="]),
    st.integers(INT64_MIN + 1, INT64_MAX) | st.sampled_from([INT64_MAX, INT64_MIN + 1, 0]),
)


@settings(max_examples=200, deadline=None)
@given(spec=st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3), rule=_rules)
def test_any_integer_anywhere_in_the_spec_never_makes_evaluation_raise(
    spec: dict[str, Any], rule: tuple[str, str, int]
) -> None:
    field, op, number = rule
    result = outcome(f"has(spec.{field}) && spec.{field} {op} {number}", spec)
    out_of_range = any(
        isinstance(v, int) and not INT64_MIN <= v <= INT64_MAX for v in _leaves(spec.get(field))
    )
    if out_of_range:
        assert result.matched is False
        assert result.error is not None
        assert result.error.startswith("spec cannot be given to CEL: spec.")
    else:
        assert result.error is None or not result.error.startswith("spec cannot")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


# --- The cost bound: accepted or refused, decided before any evaluation ----------------------

ADVERSARIAL = [
    ("nested-all-3", f"{L10}.all(a, {L10}.all(b, {L10}.all(c, true)))", True),
    (
        "nested-all-5",
        f"{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, {L10}.all(e, true)))))",
        False,
    ),
    (
        "nested-exists-5",
        f"{L10}.exists(a, {L10}.exists(b, {L10}.exists(c, {L10}.exists(d, {L10}.exists(e, a + b + c + d + e < 0)))))",
        False,
    ),
    ("map-doubling-12", "['ab']" + ".map(s, s + s)" * 12 + ".size() > 0", True),
    ("map-doubling-20", "['ab']" + ".map(s, s + s)" * 20 + ".size() > 0", False),
    ("list-doubling-16", "[[1]]" + ".map(l, l + l)" * 16 + ".size() > 0", False),
    ("map-over-spec", "spec.args.map(a, a).size() > 2", False),
    ("filter-over-spec", "spec.env.filter(e, e.name == 'X').size() > 0", False),
    ("exists-over-spec", "spec.env.exists(e, e.name == 'HF_TOKEN')", True),
    ("nested-over-spec", "spec.env.exists(e, spec.args.exists(a, a == e.name))", False),
    ("matches-spec", "spec.model.id.matches('^meta-llama/.*$')", True),
    ("matches-in-loop", "spec.args.exists(a, a.matches('^--x=.*'))", False),
    ("concat-spec-strings", "spec.provider.overrides.a + spec.provider.overrides.b == 'x'", False),
    ("concat-bounded-strings", "spec.model.id + spec.model.id == 'x'", True),
    ("compare-subtrees", "spec.engine == spec.model", False),
]


@pytest.mark.parametrize(
    ("condition", "accepted"),
    [(c, a) for _, c, a in ADVERSARIAL],
    ids=[name for name, _, _ in ADVERSARIAL],
)
def test_adversarial_rules_are_refused_by_estimated_cost(condition: str, accepted: bool) -> None:
    rule = compile_rule(ENV, condition, 0)

    assert (rule.compile_error is None) is accepted
    assert (rule.cost <= RULE_COST_LIMIT) is accepted or rule.cost == 0
    if not accepted:
        assert rule.compile_error is not None
        assert rule.compile_error.startswith(("estimated cost", "nested too deeply"))


def test_shipped_rules_cost_little(shipped: ProviderRegistry) -> None:
    costs = {c.name: [r.cost for r in c.rules] for c in shipped.configs.values()}
    assert costs == {
        "dynamo": [55, 55, 58, 66],
        "kaito": [63, 55],
        "kuberay": [66],
        "llmd": [],
        "vllm": [],
    }


def test_config_whose_rules_together_cost_too_much_is_skipped_when_loaded() -> None:
    three = f"{L10}.all(a, {L10}.all(b, {L10}.all(c, a + b + c >= 0)))"  # ~17,000 each
    count = CONFIG_COST_LIMIT // compile_rule(ENV, three, 0).cost + 1
    registry = registry_of(provider_config("dynamo", rules=[(three, 1)] * count))

    assert registry.configs == {}
    (problem,) = registry.problems
    assert problem.startswith("InferenceProviderConfig dynamo skipped: the selection rules' ")
    assert problem.endswith(f"over the limit of {CONFIG_COST_LIMIT:,} per config")


def test_config_with_too_many_rules_is_skipped_when_loaded() -> None:
    registry = registry_of(provider_config("dynamo", rules=[("true", 1)] * (MAX_RULES + 1)))

    assert registry.configs == {}
    assert registry.problems == (
        "InferenceProviderConfig dynamo skipped: spec.selectionRules: Too many: "
        f"must have at most {MAX_RULES} items, has {MAX_RULES + 1}",
    )


# --- Selection in priority order --------------------------------------------------------------


def test_selection_stops_at_the_first_match_and_picks_what_the_full_trace_picks() -> None:
    registry = registry_of(
        provider_config("dynamo", rules=[("spec.engine.type == 'sglang'", 90), ("true", 10)]),
        provider_config("kuberay", rules=[("true", 80), ("spec.x == 1", 5)]),
        provider_config("kaito", rules=[("1 / 0 == 1", 85)]),
    )
    obj = model_deployment(gpu=1)
    spec = hydrate(obj, registry=registry).obj["spec"]
    md = ModelDeployment({"spec": spec})

    choice = select_provider(spec, md, registry)
    full = rank_providers(spec, md, registry)

    # dynamo@90 (false), kaito@85 (error), kuberay@80 (match): three of five rules evaluated.
    assert choice.evaluated == 3
    assert isinstance(choice.decision, Decision)
    assert choice.decision.value == "kuberay"
    assert choice.warnings == (
        'InferenceProviderConfig kaito: rule "1 / 0 == 1" could not be evaluated and counts as '
        "not matching: INVALID_ARGUMENT: divide by zero",
    )
    assert [(c.name, c.priority) for c in full] == [
        ("dynamo", 10),
        ("kaito", None),
        ("kuberay", 80),
    ]


_priorities = st.lists(
    st.tuples(st.sampled_from(["true", "false", "1 / 0 == 1"]), st.integers(0, 3)), max_size=4
)


@settings(max_examples=100, deadline=None)
@given(dynamo=_priorities, kuberay=_priorities, llmd=_priorities)
def test_lazy_selection_picks_the_winner_of_the_full_ranking(
    dynamo: list[tuple[str, int]], kuberay: list[tuple[str, int]], llmd: list[tuple[str, int]]
) -> None:
    registry = registry_of(
        provider_config("dynamo", rules=dynamo),
        provider_config("kuberay", rules=kuberay),
        provider_config("llmd", rules=llmd),
    )
    spec = hydrate(model_deployment(gpu=1), registry=registry).obj["spec"]
    spec.pop("provider", None)
    md = ModelDeployment({"spec": spec})
    ranked = [c for c in rank_providers(spec, md, registry) if c.priority is not None]
    expected = min(ranked, key=lambda c: (-(c.priority or 0), c.name)).name if ranked else None

    decision = select_provider(spec, md, registry).decision

    assert (decision.value if isinstance(decision, Decision) else None) == expected


def test_fields_no_rule_reads_are_not_given_to_cel(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=2)
    spec = hydrate(obj, registry=shipped).obj["spec"]
    spec.pop("provider", None)
    spec["provider"] = {"overrides": {"spec": {"n": 2**70, "blob": "x" * 100_000}}}
    md = ModelDeployment({"spec": spec})

    choice = select_provider(spec, md, shipped)

    # The shipped rules read engine, resources and serving only.
    assert isinstance(choice.decision, Decision)
    assert (choice.decision.value, choice.warnings) == ("kuberay", ())


# --- Plain rules answered without the runtime (core.cel.rules._plan) ---------------------------

_EQ_KEYS = ["engine", "type", "resources", "gpu", "count", "mode"]
_eq_texts = st.sampled_from(["vllm", "", "VLLM", "é", "\x00", "\ud800", "sglang"])
_eq_leaves = st.one_of(
    _eq_texts,
    st.integers(-2, 3),
    st.sampled_from([INT64_MAX, INT64_MIN]),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
)
_eq_specs = json_trees(_eq_leaves, st.sampled_from(_EQ_KEYS), max_size=3, max_leaves=10).filter(
    lambda v: isinstance(v, dict)
)


@st.composite
def _atoms(draw: st.DrawFn) -> str:
    path = "spec." + ".".join(draw(st.lists(st.sampled_from(_EQ_KEYS), min_size=1, max_size=3)))
    text = draw(st.sampled_from(["'vllm'", '""', "'VLLM'", "'é'", '"sglang"']))
    number = draw(st.sampled_from(["0", "1", "-1", "2", "1u", "9223372036854775807"]))
    boolean = draw(st.sampled_from(["true", "false"]))
    return draw(
        st.sampled_from(
            [
                f"{path} == {text}",
                f"{text} == {path}",
                f"{path} != {text}",
                f"{path} == {number}",
                f"{path} > {number}",
                f"{number} <= {path}",
                f"{path} < {number}",
                f"{path} >= {number}",
                f"{path} != {number}",
                f"{path} == {boolean}",
                f"{boolean} != {path}",
                f"has({path})",
                "has(spec.engine)",
            ]
        )
    )


_conditions = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) && ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) || ({b})", inner, inner),
        st.builds(lambda a: f"!({a})", inner),
    ),
    max_leaves=5,
)


@settings(max_examples=600, deadline=None)
@given(spec=_eq_specs, condition=_conditions, fields=st.booleans())
def test_a_plain_rule_is_answered_as_the_runtime_answers_it(
    spec: dict[str, Any], condition: str, fields: bool
) -> None:
    """A rule of comparisons, has(), &&, || and ! answered in Python gives the runtime's
    result, error and all: fields missing, lists or null on the way, values of other types
    (1 against 1u, a bool against an int, NaN), errors absorbed by && and ||, and a spec the
    runtime cannot take whole (a lone surrogate anywhere fails every rule)."""
    rule = compile_rule(ENV, condition, 0)
    assert rule.compile_error is None, condition
    assert rule.plan is not None
    by_runtime = dataclasses.replace(rule, plan=None)
    bound = activation(ENV, spec, rule.reads if fields else None)
    assert evaluate(rule, bound) == evaluate(by_runtime, bound)


def test_the_shipped_rules_are_answered_as_the_runtime_answers_them(
    shipped: ProviderRegistry,
) -> None:
    """Every shipped rule has a plan, and on every hydrated example of the tests' builders
    (each engine, with and without GPUs, disaggregated) it answers as the runtime does."""
    rules = [r for c in shipped.configs.values() for r in c.rules]
    assert rules and all(r.plan is not None for r in rules)
    specs = [
        hydrate(model_deployment(**kwargs), registry=shipped).obj["spec"]
        for kwargs in _SHIPPED_EXAMPLES
    ]
    for spec in specs:
        bound = activation(ENV, spec)
        for rule in rules:
            assert evaluate(rule, bound) == evaluate(dataclasses.replace(rule, plan=None), bound)


_SHIPPED_EXAMPLES: list[dict[str, Any]] = [
    {},
    {"engine": "sglang"},
    {"engine": "trtllm"},
    {"engine": "llamacpp", "gpu": 0},
    {"gpu": 0},
    {"gpu": 1},
    {"gpu": 4},
    {"mode": "disaggregated"},
]


@pytest.mark.parametrize(
    ("condition", "planned"),
    [
        ("spec.engine.type == 'vllm'", True),
        ('"vllm" == spec.engine.type', True),
        ("has(spec.serving) && spec.serving.mode == 'disaggregated'", True),
        ("!has(spec.resources) || spec.resources.gpu.count == 0", True),
        ("spec.resources.gpu.count > 1u", True),
        ("spec.engine['type'] == 'vllm'", False),  # an index, not a field
        ("spec == 'vllm'", False),
        ("spec.a == 1.5", False),  # doubles compare across types in CEL
        ("spec.a == null", False),
        ("spec.a < 'b'", False),  # string order is left to the runtime
        ("spec.a == b'x'", False),
        ("size(spec.a) > 1", False),
        ("spec.a.startsWith('x')", False),
        ("spec.a == 'x' + 'y'", False),  # a computed value
        ("spec.a && true", False),
    ],
)
def test_only_the_plain_forms_are_answered_without_the_runtime(
    condition: str, planned: bool
) -> None:
    rule = compile_rule(ENV, condition, 0)
    assert rule.compile_error is None
    assert (rule.plan is not None) is planned


@pytest.mark.parametrize(
    ("spec", "condition", "fields"),
    [
        ({"type": "\x00"}, 'spec.type == ""', False),  # to the runtime, "\x00" is ""
        ({"type": "a\x00b"}, "spec.type == 'a'", True),
        ({"type": "\ud800"}, "spec.type != 'a'", True),
    ],
)
def test_a_plain_rule_on_a_string_the_runtime_reads_otherwise_is_the_runtimes_answer(
    spec: dict[str, Any], condition: str, fields: bool
) -> None:
    """Strings the runtime does not read as Python holds them (a NUL ends one, a lone
    surrogate fails the whole input) are never answered in Python."""
    rule = compile_rule(ENV, condition, 0)
    bound = activation(ENV, spec, rule.reads if fields else None)
    assert bound.spec is None
    assert evaluate(rule, bound) == evaluate(dataclasses.replace(rule, plan=None), bound)


def test_a_plain_rule_on_a_spec_with_a_lone_surrogate_is_the_runtimes_error() -> None:
    spec = {"engine": {"type": "vllm", "note": "\ud800"}}
    assert outcome("spec.engine.type == 'vllm'", spec) == RuleResult(
        False, "basic_string: construction from null is not valid"
    )
    assert outcome("spec.engine.type == 'vllm'", {"engine": {"type": "vllm"}}) == RuleResult(True)


# --- What a registry keeps (ProviderRegistry.answers) ---------------------------------------------

_names = st.one_of(
    st.sampled_from(["", "dynamo", "kuberay", "kaito", "llmd", "../", "x" * 300, "dynamo\x00"]),
    st.text(max_size=20),
)


@settings(max_examples=60, deadline=None)
@given(
    asks=st.lists(
        st.tuples(
            _names,
            st.sampled_from([None, 0, 1, 4]),
            st.sampled_from([None, "disaggregated", "?" * 300]),
        ),
        min_size=1,
        max_size=40,
    ),
    limit=st.integers(1, 8),
)
@example(
    asks=[("", None, None), ("dynamo", None, None), ("../", 1, None), ("kaito", 1, None)], limit=8
)
def test_a_registry_answers_every_engine_choice_as_computed_anew_and_keeps_at_most_its_bound(
    asks: list[tuple[str, int | None, str | None]], limit: int
) -> None:
    """Provider names and modes come from objects (empty, '../', 300 characters, NUL): each is
    answered as a registry that keeps nothing answers it, and no more than MAX_ANSWERS
    answers are kept, however many distinct ones are asked for."""
    registry, fresh = shipped_registry(), shipped_registry()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(configs, "MAX_ANSWERS", limit)
        for provider, gpu, mode in asks:
            md = ModelDeployment(model_deployment(provider=provider or None, gpu=gpu, mode=mode))
            kept = select_engine(md, registry, explicit_provider=provider)
            fresh.answers.clear()
            assert kept == select_engine(md, fresh, explicit_provider=provider)
            fresh.answers.clear()
            candidates = tuple(registry.configs)[: len(provider) % 6]
            assert _order_of(registry, candidates) == _order_of(fresh, candidates)
            assert len(registry.answers) <= limit


def _order_of(registry: ProviderRegistry, candidates: tuple[str, ...]) -> tuple[Any, ...]:
    order = registry.selection_order(candidates)
    rules = [(rule.condition, rule.priority, name) for rule, name in order.rules]
    return rules, order.reads, order.among
