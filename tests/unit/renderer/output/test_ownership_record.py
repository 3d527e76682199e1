"""The ownership record's text (renderer.output.ownership.record_text, written line by line) is exactly
the text json.dumps writes for it with one-space indents, sorted keys and no ASCII escaping,
over generated records: any strings (quotes, backslashes, control characters, non-ASCII, lone
surrogates), any order given, and none; and read_record reads it back to the record."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.output.ownership import RECORD_KIND, SOURCES_FILE, read_record, record_text

TEXT = st.text(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=12)
FOLDERS = st.tuples(TEXT, TEXT).map("/".join)
RECORDS = st.dictionaries(FOLDERS | TEXT, TEXT, max_size=30)


def reference(record: dict[str, str]) -> str:
    body = {"kind": RECORD_KIND, "sources": dict(sorted(record.items()))}
    return json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@settings(max_examples=500, deadline=None)
@given(RECORDS)
def test_the_record_text_is_json_dumps_text(record: dict[str, str]) -> None:
    assert record_text(record) == reference(record)


@given(RECORDS)
def test_the_record_reads_back(record: dict[str, str]) -> None:
    kept = {k: v for k, v in record.items() if k.count("/") == 1 and ".." not in k}
    assert read_record({SOURCES_FILE: record_text(record)}) == kept


def test_an_empty_record_is_json_dumps_text() -> None:
    assert record_text({}) == f'{{\n "kind": "{RECORD_KIND}",\n "sources": {{}}\n}}\n'
