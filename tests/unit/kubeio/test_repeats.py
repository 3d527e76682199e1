"""Repeated log lines (kubeio/repeats.py). Over time, as the status controller uses it: the same
subject and text at most once per period, the next line saying how many were held back; another
text, another subject or a recovery (`clear`) is written at once. Within a pass, as the gateway
sync uses it: each line once at `flush`, with its count and at most five names."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeio.repeats import Repeats

EVENTS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y"]), st.floats(0, 30)),
    max_size=40,
)


def throttled(now: list[float]) -> Repeats:
    """Warnings as the status controller writes them, under the clock `now[0]`."""
    return Repeats(
        logging.getLogger("throttle-test"),
        every=60.0,
        clock=lambda: now[0],
        prefix="status-controller: ",
    )


@given(EVENTS)
def test_a_line_is_written_once_per_period_per_subject_and_text(
    events: list[tuple[str, str, float]],
) -> None:
    now = [0.0]
    throttle = throttled(now)
    last: dict[str, tuple[str, float]] = {}
    for subject, text, step in events:
        now[0] += step
        seen = last.get(subject)
        expected = seen is None or seen[0] != text or now[0] - seen[1] >= 60.0
        assert throttle.warning(subject, text) is expected
        if expected:
            last[subject] = (text, now[0])


def test_the_next_line_counts_what_was_held_back(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    throttle = throttled(now)
    with caplog.at_level(logging.WARNING, logger="throttle-test"):
        for _ in range(5):
            throttle.warning("ns/m", "(422) Unprocessable Entity")
            now[0] += 10
        now[0] = 61
        throttle.warning("ns/m", "(422) Unprocessable Entity")
        throttle.clear("ns/m")
        throttle.warning("ns/m", "(422) Unprocessable Entity")
    assert caplog.messages == [
        "status-controller: ns/m: (422) Unprocessable Entity",
        "status-controller: ns/m: (422) Unprocessable Entity (4 more like it in the last 60 s)",
        "status-controller: ns/m: (422) Unprocessable Entity",
    ]


def test_a_pass_writes_each_line_once_with_its_count_and_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = Repeats(logging.getLogger("repeats-test"))
    with caplog.at_level(logging.WARNING, logger="repeats-test"):
        for name in ("a", "b", "c", "d", "e", "f", "g"):
            lines.add("write failed: HTTP 500", name)
        lines.add("gone", "x")
        lines.flush()
        lines.flush()
    assert caplog.messages == [
        "write failed: HTTP 500 (7: a,b,c,d,e,and 2 more)",
        "gone (1: x)",
    ]
