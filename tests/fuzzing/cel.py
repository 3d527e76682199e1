"""`make fuzz` area: generated adversarial CEL rules, regex bombs included (issue #18, item 8).

Each case is one InferenceProviderConfig with one generated rule, through the admission check
(core.admission.configs). The rule it protects: a refused config names the rule's field
path; an admitted rule's evaluation over a spec at CEL's input limits stays under the per-rule
bound (docs/security.md). As many generated patterns again check that an accepted
pattern's bound covers the program RE2 (google-re2) compiles for it. 2,000 cases (and 2,000
patterns) take about 20 s of CPU: a refused case costs about a millisecond, an admitted one at
most the bound.
"""

from __future__ import annotations

import re2
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.admission.configs import check_provider_config
from core.cel.regex import check_pattern
from core.cel.rules import compile_rule, new_environment
from core.fields.errors import FieldError, Reason
from tests.fuzzing import Report
from tests.support.builders import provider_config
from tests.support.celbombs import (
    PATTERNS,
    RULE_BOUND_MS,
    RULES,
    SIZED_PATTERNS,
    cost_ms,
    worst_bound,
)


def run(examples: int) -> Report:
    """Generate `examples` rules; count refusals without a field path and slow admitted ones."""
    env = new_environment()
    bound = worst_bound(env)
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
    return report


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
