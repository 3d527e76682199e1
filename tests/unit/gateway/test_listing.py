"""gateway/listing.py reads a /model/info answer one entry at a time: for any text it gives what
parsing the whole answer with json.loads and reducing its "data" list gives, or the same kind of
error (issue #46: an 8 MB listing of 1,000 models is never parsed whole)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway import listing
from gateway.litellm import _entry
from tests.support.hostile_gateway import ENTRY, JSON

SPACE = st.sampled_from(["", " ", "\n", "\t \r\n"])


def whole(text: str) -> list[dict[str, Any]] | str:
    """What parsing the whole text gives: the reduced entries, or the kind of error."""
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(answer, dict):
        return "not an object"
    data = answer.get("data")
    if not isinstance(data, list):
        return "no data list"
    return [e for e in (_entry(d) for d in data if isinstance(d, Mapping)) if e is not None]


def walked(text: str) -> list[dict[str, Any]] | str:
    try:
        return listing.entries(text, _entry)
    except listing.NotAnObject:
        return "not an object"
    except listing.NoDataList:
        return "no data list"
    except (ValueError, RecursionError):
        return "not JSON"


ANSWERS = st.one_of(
    JSON,
    st.dictionaries(st.text(max_size=5), JSON, max_size=3),
    st.builds(
        lambda before, data, after: {**before, "data": data, **after},
        st.dictionaries(st.text(max_size=5), JSON, max_size=2),
        st.lists(st.one_of(ENTRY, JSON), max_size=5),
        st.dictionaries(st.sampled_from(["x", "all_api_bases"]), JSON, max_size=2),
    ),
)


@settings(max_examples=400, deadline=None)
@given(ANSWERS, SPACE, st.booleans())
def test_walking_an_answer_gives_what_parsing_it_whole_gives(
    answer: Any, space: str, indent: bool
) -> None:
    text = space + json.dumps(answer, indent=2 if indent else None) + space
    assert walked(text) == whole(text)


@settings(max_examples=400, deadline=None)
@given(ANSWERS, st.integers(min_value=0, max_value=200), st.sampled_from(["", "x", "]", ",", "}"]))
def test_a_cut_or_spoiled_answer_is_the_same_error(answer: Any, cut: int, junk: str) -> None:
    text = json.dumps(answer)
    spoiled = text[: len(text) - cut % (len(text) + 1)] + junk
    assert walked(spoiled) == whole(spoiled)


@pytest.mark.parametrize(
    "text",
    [
        '{"data": [{"model_name": "a"}], "data": "x"}',
        '{"data": "x", "data": [{"model_name": "a"}]}',
        '{"data": [1,]}',
        '{"data": [], }',
        "{,}",
        '{"a" "b"}',
        "{1: 2}",
        "[" * 100_000,
        '{"data": [' + "[" * 100_000 + "]}",
        "NaN",
        '{"data": [{"model_name": NaN}]}',
    ],
)
def test_odd_texts_read_as_json_loads_reads_them(text: str) -> None:
    assert walked(text) == whole(text)


def test_more_usable_entries_than_kept_are_refused() -> None:
    text = json.dumps({"data": [{"model_name": f"m{i}"} for i in range(4)] + [{}] * 10})
    assert len(listing.entries(text, _entry, limit=4)) == 4
    with pytest.raises(listing.TooMany):
        listing.entries(text, _entry, limit=3)
