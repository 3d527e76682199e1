"""kubeio.backoff.Backoff, the per-key backoff of the status controller's worker and the gateway's
status writes and failed passes: it doubles per failure up to its most, a success forgets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeio.backoff import Backoff


@given(st.lists(st.sampled_from(["fail", "ok"]), max_size=30))
def test_backoff_doubles_per_failure_up_to_the_most_and_a_success_forgets(
    outcomes: list[str],
) -> None:
    backoff = Backoff(0.5, 4.0)
    key = ("ns", "m")
    streak = 0
    for outcome in outcomes:
        if outcome == "ok":
            backoff.succeed(key)
            streak = 0
            continue
        streak += 1
        assert backoff.fail(key)[1] == min(0.5 * 2 ** (streak - 1), 4.0)
    assert backoff.count(key) == streak


@settings(max_examples=50)
@given(st.integers(1, 10_000))
def test_backoff_never_overflows(failures: int) -> None:
    backoff = Backoff(0.5, 300.0)
    for _ in range(failures):
        delay = backoff.fail(("ns", "m"))[1]
    assert delay == min(0.5 * 2.0 ** min(failures - 1, 64), 300.0)
