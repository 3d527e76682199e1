"""webhook/metrics.py: /metrics is the same text whatever order the answers came in (the
workers' files are read in any order), and labels stay within their fixed sets whatever the
webhook is asked to count."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from webhook.metrics import ERROR_CODES, KINDS, OPERATIONS, OTHER, OUTCOMES, Metrics

BOUNDED = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
# Durations (powers of two) a float sum adds exactly in any order: only line order could differ.
ANSWERS = st.lists(
    st.tuples(
        st.sampled_from(sorted(KINDS)),
        st.sampled_from(sorted(OPERATIONS)),
        st.booleans(),
        st.sampled_from([2**-10, 0.25, 2.0, 8.0]),
    ),
    max_size=30,
)


def rendered(answers: list[tuple[tuple[str, str], str, bool, float]]) -> str:
    metrics = Metrics()
    for (group, kind), operation, allowed, seconds in answers:
        metrics.observe(
            group=group, kind=kind, operation=operation, allowed=allowed, seconds=seconds
        )
        metrics.selected(provider=kind.lower(), how="auto" if allowed else "explicit")
    return metrics.render()


@BOUNDED
@given(answers=ANSWERS, data=st.data())
def test_the_text_is_the_same_whatever_the_order_of_the_answers(
    answers: list[tuple[tuple[str, str], str, bool, float]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(answers))

    assert rendered(shuffled) == rendered(answers)


@BOUNDED
@given(codes=st.lists(st.integers(-1000, 1000)), outcomes=st.lists(st.text(max_size=50)))
def test_error_and_restart_labels_stay_within_their_sets(
    codes: list[int], outcomes: list[str]
) -> None:
    metrics = Metrics()
    for code in codes:
        metrics.failed(code)
    for outcome in outcomes:
        metrics.watch_restarted(outcome)

    families = list(text_string_to_metric_families(metrics.render()))
    errors = {
        s.labels["code"]: s.value
        for f in families
        for s in f.samples
        if s.name == "runway_admission_errors_total"
    }
    restarts = {
        s.labels["outcome"]: s.value
        for f in families
        for s in f.samples
        if s.name == "runway_provider_config_watch_restarts_total"
    }
    expected_errors: dict[str, float] = {}
    for code in codes:
        label = str(code) if code in ERROR_CODES else OTHER
        expected_errors[label] = expected_errors.get(label, 0.0) + 1
    expected_restarts: dict[str, float] = {}
    for outcome in outcomes:
        label = outcome if outcome in OUTCOMES else OTHER
        expected_restarts[label] = expected_restarts.get(label, 0.0) + 1
    assert (errors, restarts) == (expected_errors, expected_restarts)
