"""Size bounds checked before any other code walks an object (nesting depth, value count)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from core.fields.errors import FieldError, Reason
from core.schema.bounds import MAX_NESTING, MAX_VALUES, size_errors
from tests.support.builders import model_deployment

TOO_MANY = FieldError(
    "spec",
    Reason.TOO_MANY,
    f"the object holds more than {MAX_VALUES} values (map entries and list items, at any "
    "depth); Runway's objects need a few hundred: keep bulk data out of them",
)


def _values(obj: Any) -> int:
    """Map entries and list items at any depth, counted the plain recursive way."""
    if isinstance(obj, dict):
        return len(obj) + sum(_values(v) for v in obj.values())
    if isinstance(obj, list):
        return len(obj) + sum(_values(v) for v in obj)
    return 0


def _with_values(total: int) -> dict[str, Any]:
    """A ModelDeployment holding exactly `total` values (its extraArgs list fills the rest)."""
    obj = model_deployment(engine={"type": "vllm", "extraArgs": []})
    obj["spec"]["engine"]["extraArgs"] = ["--x"] * (total - _values(obj))
    return obj


def test_an_object_with_the_most_values_allowed_passes() -> None:
    obj = _with_values(MAX_VALUES)

    assert _values(obj) == MAX_VALUES
    assert size_errors(obj) == []


def test_one_value_more_is_refused_naming_the_top_level_field() -> None:
    assert size_errors(_with_values(MAX_VALUES + 1)) == [TOO_MANY]


class _CountingList(list[Any]):
    """A list that counts the items read from it: the walk's work, measured without a clock."""

    read = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _CountingList.read += 1
            yield item


def test_a_list_past_the_limit_is_refused_before_any_item_is_read() -> None:
    _CountingList.read = 0
    obj = model_deployment(engine={"type": "vllm", "extraArgs": _CountingList(["--x"] * 10**6)})

    assert size_errors(obj) == [TOO_MANY]
    assert _CountingList.read == 0


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        (MAX_NESTING, []),
        (MAX_NESTING + 1, [FieldError("spec", Reason.INVALID, "nested deeper than 100 levels")]),
    ],
    ids=["at-the-limit", "one-deeper"],
)
def test_nesting_counts_the_object_itself_as_the_first_level(
    depth: int, expected: list[FieldError]
) -> None:
    """`depth` levels of objects: the object, spec, and depth-2 more inside spec."""
    node: dict[str, Any] = {}
    obj = {"apiVersion": "airunway.ai/v1alpha1", "spec": node}
    for _ in range(depth - 2):
        node["x"] = {}
        node = node["x"]

    assert size_errors(obj) == expected


def _nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(levels):
        value = {"x": value} if level % 2 else [value]
    return value


NESTED_TOO_DEEP = [FieldError("spec", Reason.INVALID, "nested deeper than 100 levels")]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (_nested(MAX_NESTING - 1), []),  # with the object itself: 100 levels
        (_nested(MAX_NESTING - 1, leaf={}), NESTED_TOO_DEEP),  # an empty container is a level
        (_nested(5000), NESTED_TOO_DEEP),
        ({"a": {}, "b": [1, [2, {"c": _nested(MAX_NESTING)}]]}, NESTED_TOO_DEEP),
        ([[], [[[]]], {}], []),
    ],
    ids=["at-limit", "one-past-empty-leaf", "far-past", "deepest-branch", "arrays"],
)
def test_nesting_counts_objects_and_arrays_on_every_branch(
    spec: Any, expected: list[FieldError]
) -> None:
    assert size_errors({"apiVersion": "airunway.ai/v1alpha1", "spec": spec}) == expected
