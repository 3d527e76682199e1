"""`make fuzz` area: generated adversarial CEL rules, regex bombs included (issue #18, item 8),
and lookups, concatenation and comprehensions over a spec at its declared bounds (issue #40,
item 3).

Each case is one InferenceProviderConfig with one generated rule, through the admission check
(core.admission.configs). The rule it protects: a refused config names the rule's field
path; an admitted rule's evaluation over a spec at CEL's input limits stays under the per-rule
bound (docs/security.md). As many generated patterns again check that an accepted
pattern's bound covers the program RE2 (google-re2) compiles for it. 2,000 cases (and 2,000
patterns) take about 20 s of CPU: a refused case costs about a millisecond, an admitted one at
most the bound. The lookup rules (LOOKUP_RULES) are measured over lookup_spec(), a spec the
ModelDeployment schema admits with every field rules read at its declared bound and every
lookup missing (a miss quotes its key in an error): an admitted one's evaluation must cost no
more than its estimate (MULTIPLE times it, at least FLOOR units: timer and call noise).
"""

from __future__ import annotations

from typing import Any

import re2
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.admission.configs import check_provider_config
from core.cel.cost import INPUT_STRING_LIMIT
from core.cel.regex import check_pattern
from core.cel.rules import Environment, activation, compile_rule, new_environment
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.compiled import Checker
from core.schema.crds import (
    ARGS,
    ENTRIES,
    EXTRA_ARGS,
    IMAGE,
    LABEL,
    MODEL_ID,
    NAME,
    VALUE,
    model_deployment_spec,
)
from core.schema.structural import MAX_KEY_LENGTH
from tests.fuzzing import Report
from tests.support.builders import provider_config
from tests.support.celbombs import (
    PATTERNS,
    RULE_BOUND_MS,
    RULES,
    SIZED_PATTERNS,
    TEXTS,
    cost_ms,
    worst_spec,
)

MULTIPLE = 1.0  # an admitted lookup rule's measured cost over its estimate, at most
FLOOR = 2_000  # units (0.2 ms): below this the timer and the call itself dominate
# What a rule looks things up with, and the length the estimate must take it at: the declared
# bound of the field (core.schema.crds), the input limit where nothing declares one (overrides).
KEYS = {
    "spec.model.id": MODEL_ID,
    "spec.model.servedName": NAME,
    "spec.image": IMAGE,
    "spec.provider.overrides.k": INPUT_STRING_LIMIT,
    "'--x'": 3,
}
# Each form does at least one lookup whose key is at least as long as {k} per iteration.
INDEX_FORMS = (
    "spec.engine.args[{k}] == '1'",
    "{k} in spec.engine.args",
    "spec.engine.args[{k} + 'x'] == '1'",
    "spec.nodeSelector[{k}] == 'a'",
    "{k} in spec.podTemplate.metadata.labels",
)
OTHER_FORMS = (
    "{k} + {k} in spec.engine.args",
    "spec.engine.extraArgs.exists(a, a == {k})",
    "{k} in spec.engine.extraArgs",
    "spec.engine.args.exists(a, spec.engine.args[a] == {k})",
    "spec.engine.args.map(a, a + {k}).exists(a, a in spec.engine.args)",
    "[{k}, {k} + {k}].exists(x, x in spec.nodeSelector)",
)


def declared_worst_spec() -> dict[str, Any]:
    """worst_spec() within the bounds the ModelDeployment schema declares: spec.model.id at its
    maxLength (admission refuses a longer one before any rule runs, and the estimate takes it
    there); the fields it does not declare stay at CEL's input limits."""
    spec = worst_spec()
    spec["model"] = {"id": TEXTS["ab"][:MODEL_ID]}
    return spec


def lookup_rule(key: str, form: str, loops: list[int]) -> str:
    """`form` with `key`, inside one comprehension per entry of `loops` (its list's length)."""
    body = form.format(k=key)
    for depth, n in enumerate(loops):
        items = ", ".join(str(i) for i in range(n))
        body = f"[{items}].all(i{depth}, {body})"
    return body


LOOKUP_LOOPS = st.lists(st.integers(1, 20), max_size=3)
INDEX_RULES = st.tuples(st.sampled_from(sorted(KEYS)), st.sampled_from(INDEX_FORMS), LOOKUP_LOOPS)
LOOKUP_RULES = st.tuples(
    st.sampled_from(sorted(KEYS)), st.sampled_from(INDEX_FORMS + OTHER_FORMS), LOOKUP_LOOPS
).map(lambda t: lookup_rule(*t))


def lookup_spec() -> dict[str, Any]:
    """A spec the ModelDeployment schema admits, with every field the lookup rules read at its
    declared bound, and no key any of them looks up (every lookup takes the miss path)."""
    value = "v" * VALUE  # one string object, shared: the runtime copies each value anyway

    def key(i: int) -> str:
        return f"k{i:04d}".ljust(MAX_KEY_LENGTH, "k")

    return {
        "engine": {
            "type": "vllm",
            "args": {key(i): value for i in range(ARGS)},
            "extraArgs": ["-" * VALUE] * EXTRA_ARGS,
        },
        "model": {"id": "m" * MODEL_ID, "servedName": "s" * NAME},
        "image": "i" * IMAGE,
        "provider": {"name": "vllm", "overrides": {"k": "o" * INPUT_STRING_LIMIT}},
        "nodeSelector": {key(i): "n" * LABEL for i in range(ENTRIES)},
        "podTemplate": {"metadata": {"labels": {key(i): "l" * LABEL for i in range(ENTRIES)}}},
    }


def lookup_ratio(env: Environment, condition: str, bound: Any) -> float | None:
    """Measured cost over the estimate (at least FLOOR) of an admitted rule; None if refused."""
    rule = compile_rule(env, condition, 1)
    if rule.program is None:
        return None
    estimate_ms = max(rule.cost, FLOOR) * 1e-4
    ms = cost_ms(rule, bound)
    if ms > MULTIPLE * estimate_ms:  # the fastest of more rounds: a shared machine only adds
        ms = cost_ms(rule, bound, rounds=7)
    return ms / estimate_ms


def run(examples: int) -> Report:
    """Generate `examples` rules; count refusals without a field path and slow admitted ones."""
    env = new_environment()
    bound = activation(env, declared_worst_spec())
    report = Report("cel-rules")
    worst = {"admitted": 0.0, "refused": 0.0, "slowest_ms": 0.0}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(RULES)
    def case(condition: str) -> None:
        report.cases += 1
        rule = compile_rule(env, condition, 1)
        errors = check_provider_config(provider_config("dynamo", rules=[(condition, 1)]))
        if rule.program is None:
            worst["refused"] += 1
            expected = FieldError(
                "spec.selectionRules[0].condition", Reason.INVALID, str(rule.compile_error)
            )
            if errors != [expected]:
                report.failures.append(f"refused without its field path: {condition[:200]}")
            return
        worst["admitted"] += 1
        ms = cost_ms(rule, bound)
        worst["slowest_ms"] = max(worst["slowest_ms"], ms)
        if errors or ms > RULE_BOUND_MS:
            report.failures.append(
                f"{ms:.1f} ms (bound {RULE_BOUND_MS:g} ms), errors {errors}: {condition[:200]}"
            )

    case()
    report.numbers.update(worst, bound_ms=RULE_BOUND_MS)
    _program_sizes(examples, report)
    _lookups(examples, report)
    return report


def _lookups(examples: int, report: Report) -> None:
    """Generated lookup rules over lookup_spec(): an admitted one costs at most its estimate."""
    env = new_environment()
    spec = lookup_spec()
    problems = Checker(model_deployment_spec()).errors(spec, FieldPath.root("spec"))
    if problems:
        report.failures.append(f"lookup_spec() is not admissible: {problems[:3]}")
        return
    bound = activation(env, spec)
    most = {"lookups_admitted": 0.0, "lookups_refused": 0.0, "lookup_largest_ratio": 0.0}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(LOOKUP_RULES)
    def lookup_case(condition: str) -> None:
        report.cases += 1
        ratio = lookup_ratio(env, condition, bound)
        if ratio is None:
            most["lookups_refused"] += 1
            return
        most["lookups_admitted"] += 1
        most["lookup_largest_ratio"] = max(most["lookup_largest_ratio"], round(ratio, 3))
        if ratio > MULTIPLE:
            report.failures.append(f"{ratio:.2f} x its estimate: {condition[:200]}")

    lookup_case()
    report.numbers.update(most)


def _program_sizes(examples: int, report: Report) -> None:
    """Generated patterns: an accepted one's bound covers the program RE2 compiles for it."""
    most = {"patterns": 0.0, "largest_size_to_bound": 0.0}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(SIZED_PATTERNS, PATTERNS))
    def pattern_case(pattern: str) -> None:
        verdict = check_pattern(pattern)
        if verdict.problem is not None:
            return
        try:
            size = re2.compile(pattern).programsize
        except re2.error:  # RE2 refuses it too: the rule is an error at run time
            return
        most["patterns"] += 1
        most["largest_size_to_bound"] = max(most["largest_size_to_bound"], size / verdict.weight)
        if size > verdict.weight:
            report.failures.append(f"RE2 program {size} over the bound {verdict.weight}: {pattern}")

    pattern_case()
    report.numbers.update(most)
