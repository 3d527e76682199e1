"""The stamp's recorded results are checked a field at a time over every row: exactly the rows
whose every field is of its type are accepted (as checking each row on its own would), and
they are the Results the stamp's report is printed from."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.output.folders import Result
from renderer.reuse.stamp import ROW_FIELDS, _rows

TEXT = st.sampled_from(["a/b", "x.yaml", "", "é"])
WRONG = st.sampled_from([None, 3, b"x", ["x"], ("x",), 1.5])
TEXTS = st.lists(TEXT, max_size=3).map(tuple)
OPTIONAL = st.none() | TEXT
PAIRS = st.lists(st.tuples(TEXT, TEXT), max_size=2).map(tuple)
GOOD_ROW = st.tuples(TEXT, TEXTS, OPTIONAL, TEXTS, OPTIONAL, OPTIONAL, PAIRS, TEXT)


@st.composite
def rows(draw: st.DrawFn) -> list[Any]:
    """Rows, some with one field (or a value inside one) of another type or shape."""
    made: list[Any] = []
    for row in draw(st.lists(GOOD_ROW, max_size=5)):
        fields: list[Any] = list(row)
        spoil = draw(st.integers(0, ROW_FIELDS + 3))
        if spoil < ROW_FIELDS:
            fields[spoil] = draw(WRONG)
        elif spoil == ROW_FIELDS and fields[1]:
            fields[1] = (*fields[1][:-1], draw(WRONG))  # a file name of another type
        elif spoil == ROW_FIELDS + 1:
            fields = fields[:-1]  # a row too short
        made.append(tuple(fields) if draw(st.booleans()) or spoil < ROW_FIELDS else list(fields))
    return made


def _each_row_checked(raw: list[Any]) -> bool:
    """The specification, a row at a time: every field of exactly its type."""

    def texts(value: Any) -> bool:
        return type(value) is tuple and all(type(v) is str for v in value)

    for row in raw:
        if type(row) is not tuple or len(row) != ROW_FIELDS:
            return False
        key, names, error, warnings, engine, provider, schemas, line = row
        if type(key) is not str or type(line) is not str:
            return False
        if not texts(names) or not texts(warnings):
            return False
        if not all(v is None or type(v) is str for v in (error, engine, provider)):
            return False
        if type(schemas) is not tuple or not all(texts(p) and len(p) == 2 for p in schemas):
            return False
    return True


@settings(max_examples=500, deadline=None)
@given(rows())
def test_rows_are_accepted_exactly_when_every_field_is_of_its_type(raw: list[Any]) -> None:
    if _each_row_checked(raw):
        assert _rows(raw) == tuple(raw)
    else:
        with pytest.raises(TypeError):
            _rows(raw)


@given(GOOD_ROW)
def test_a_recorded_result_is_the_one_the_constructor_makes(row: Any) -> None:
    key, names, error, warnings, engine, provider, schemas, _ = row
    files = dict.fromkeys(names, "")
    made = Result.recorded(
        key,
        files,
        error=error,
        warnings=warnings,
        engine=engine,
        provider=provider,
        schemas=schemas,
    )
    expected = Result(key, files, error, warnings, engine, provider, schemas=schemas)
    assert made == expected
    assert vars(made) == vars(expected)
    assert list(vars(made)) == [f.name for f in dataclasses.fields(Result)]
