"""renderer.rendercache.Shared: equal values become one object, and nothing else changes."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from renderer.rendercache import Shared

YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=30,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


@given(value=YAML_VALUES)
def test_a_shared_copy_equals_the_value_its_equal_strings_one_object(value: Any) -> None:
    copy = Shared().deep(value)

    assert copy == value
    assert repr(copy) == repr(value)  # the same types and the same key order
    assert pickle.loads(pickle.dumps(copy)) == value
    found: dict[str, str] = {}
    for text in _strings(copy):
        assert found.setdefault(text, text) is text


def test_equal_values_are_one_object_and_each_is_pickled_once() -> None:
    one = Shared()
    kind = ("apps/v1 Deployment", "Kubernetes")
    value = {"kind": "x" * 100, "spec": ["".join(["x"] * 100)]}  # two equal, distinct strings
    copy = Shared().deep(value)

    assert one(kind) is one(tuple(list(kind)))
    assert copy["kind"] is copy["spec"][0]
    assert value["kind"] is not value["spec"][0]
    assert len(pickle.dumps(copy)) <= len(pickle.dumps(value)) - 100  # the 100 characters once
