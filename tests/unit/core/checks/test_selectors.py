"""Label selectors parsed as the API server parses them (core/checks/labelselectors.py): the cases
of k8s.io/apimachinery's selector_test.go, and every selector built from the grammar is
accepted. tests/e2e/test_health_selectors.py compares generated token soups with the real
kube-apiserver's answers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.checks.labelselectors import problem

NAME = st.from_regex(r"[a-z0-9]([-a-z0-9_.]{0,10}[a-z0-9])?", fullmatch=True)
PREFIX = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
KEY = st.one_of(NAME, st.builds(lambda p, n: f"{p}/{n}", PREFIX, NAME))
VALUE = st.one_of(st.just(""), NAME)
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def requirement(draw: st.DrawFn) -> str:
    key, gap = draw(KEY), draw(SPACE)
    form = draw(st.sampled_from(["exists", "not", "=", "==", "!=", "in", "notin", ">", "<"]))
    if form == "exists":
        return key
    if form == "not":
        return f"!{gap}{key}"
    if form in ("in", "notin"):
        values = draw(st.lists(NAME, min_size=1, max_size=3))
        return f"{key} {form}{gap}({gap}{f'{gap},{gap}'.join(values)}{gap})"
    if form in (">", "<"):
        return f"{key}{gap}{form}{gap}{draw(st.integers(0, 2**63 - 1))}"
    return f"{key}{gap}{form}{gap}{draw(VALUE)}"


@given(st.lists(requirement(), max_size=4), SPACE)
def test_every_selector_of_the_grammar_is_accepted(parts: list[str], gap: str) -> None:
    assert problem(f"{gap},{gap}".join(parts)) is None


@pytest.mark.parametrize(
    "selector",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_upstreams_good_selectors(selector: str) -> None:
    assert problem(selector) is None


@pytest.mark.parametrize(
    ("selector", "why"),
    [
        ("x=a||y=b", "unable to parse requirement: values[0]: invalid label value: 'a||y'"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            "x<a",
            "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an "
            "integer (values[0]: 'a')",
        ),
        ("app in (a, b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a,", "found '', expected: identifier after ','"),
        ("x>9223372036854775808", None),
    ],
)
def test_upstreams_bad_selectors(selector: str, why: str | None) -> None:
    if why is None:  # past int64
        assert problem(selector) == (
            "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an "
            "integer (values[0]: '9223372036854775808')"
        )
    else:
        assert problem(selector) == why
