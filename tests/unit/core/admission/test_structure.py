"""The structure check's one walk (core.admission.hydrate.is_small_and_plain) against the
checks it stands in for: whenever it answers True, size_errors and number_errors find nothing,
over generated values of every JSON type and some that are not, nesting around MAX_NESTING and
value counts around MAX_VALUES; and it answers True for plain objects within the bounds, so
admissions take the one walk."""

from __future__ import annotations

import datetime as dt
import math
from enum import StrEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.hydrate import is_small_and_plain, structure_errors
from core.fields.paths import FieldPath
from core.model.numbers import INT64_MAX, INT64_MIN, number_errors
from core.schema.bounds import MAX_NESTING, MAX_VALUES, size_errors
from tests.support.builders import model_deployment


class Colour(StrEnum):
    RED = "red"


class Count(int):
    pass


ODD = st.sampled_from(
    [(1, 2), {1, 2}, dt.date(2026, 1, 1), b"x", Colour.RED, Count(3), Count(2**64), math.nan]
)
NUMBERS = st.one_of(
    st.integers(INT64_MIN - 2, INT64_MIN + 2),
    st.integers(INT64_MAX - 2, INT64_MAX + 2),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALARS = st.none() | st.booleans() | NUMBERS | st.text(max_size=4)
VALUES = st.recursive(
    SCALARS | ODD,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=25,
)


def exact_checks_pass(obj: dict[str, Any]) -> bool:
    return size_errors(obj) == [] and number_errors(obj, FieldPath()) == []


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@settings(max_examples=1500, deadline=None)
@given(obj=st.dictionaries(st.text(max_size=3), VALUES, max_size=5))
def test_the_one_walk_passes_only_what_the_exact_checks_pass(obj: dict[str, Any]) -> None:
    if is_small_and_plain(obj):
        assert exact_checks_pass(obj)


@settings(max_examples=300, deadline=None)
@given(
    depth=st.integers(MAX_NESTING - 3, MAX_NESTING + 3),
    count=st.integers(MAX_VALUES - 5, MAX_VALUES + 5),
    split=st.integers(0, 4),
)
def test_the_one_walk_holds_the_bounds_exactly(depth: int, count: int, split: int) -> None:
    deep = {"metadata": {"name": "m"}, "spec": {"x": nested(depth)}}
    assert is_small_and_plain(deep) is exact_checks_pass(deep)
    items = [0] * (count - 2 - split)
    wide = {"a": items, "b": [[]] * split}
    assert is_small_and_plain(wide) is exact_checks_pass(wide)


@pytest.mark.parametrize(
    "value",
    [INT64_MAX + 1, INT64_MIN - 1, math.inf, -math.inf, math.nan, (1,), Colour.RED, Count(1)],
    ids=["int-above", "int-below", "inf", "minus-inf", "nan", "tuple", "strenum", "int-subclass"],
)
def test_values_the_one_walk_leaves_to_the_exact_checks(value: Any) -> None:
    obj = model_deployment(gpu=1)
    obj["spec"]["resources"]["extra"] = [{"v": value}]

    assert is_small_and_plain(obj) is False


def test_an_object_within_the_bounds_takes_the_one_walk() -> None:
    obj = model_deployment(gpu=1, engine="vllm", provider="dynamo")
    entry = {"manager": "kubectl", "fieldsV1": {"f:spec": {}}, "seconds": 1.5, "n": None}
    obj["metadata"]["managedFields"] = [entry] * 50

    assert is_small_and_plain(obj) is True
    assert structure_errors(obj) == []
