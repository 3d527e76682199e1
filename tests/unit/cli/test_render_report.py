"""`runway render -o json`: the report's encoder (one encoder made once, result rows encoded
as _payload orders their keys) gives json.dumps' text, keys sorted, for every row."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cli.render import _json_report, _payload, _row_encoder
from renderer.folders import Result
from renderer.ownership import Removals
from renderer.settings import RenderReport

TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", '"', "\\", "\u2028", "\x00", "é", "😀", "</script>"]
)
OPTIONAL = st.none() | TEXT
KEY = st.tuples(TEXT, TEXT)  # a name may hold a slash (a hostile one is refused, and reported)
RESULTS = st.builds(
    lambda key, files, error, warnings, engine, provider: Result(
        f"{key[0]}/{key[1]}",
        dict.fromkeys(files, ""),
        error,
        tuple(warnings),
        engine,
        provider,
    ),
    KEY,
    st.lists(TEXT, max_size=4),
    OPTIONAL,
    st.lists(TEXT, max_size=3),
    OPTIONAL,
    OPTIONAL,
)


def _reference(payload: dict[str, Any]) -> str:
    """The report as the encoder that sorts every mapping's keys writes it."""
    rows = ",\n    ".join(json.dumps(row, sort_keys=True) for row in payload["results"])
    parts = [
        f"  {json.dumps(key)}: "
        + (
            f"[\n    {rows}\n  ]"
            if key == "results" and payload[key]
            else json.dumps(payload[key], sort_keys=True)
        )
        for key in sorted(payload)
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(RESULTS, max_size=6))
def test_the_report_is_what_sorting_every_mapping_gives(results: list[Result]) -> None:
    changes = {"added": ["a/b.yaml"], "changed": [], "removed": []}
    report = RenderReport(results, changes, Removals((), (), None, 0), len(results), "abc")
    payload = _payload(report)
    text = _json_report(payload)
    assert text == _reference(payload)
    assert json.loads(text) == payload
    for row, result in zip(payload["results"], results, strict=True):
        assert list(row) == sorted(row)
        assert _row_encoder()(row) == json.dumps(row, sort_keys=True)
        assert [row["namespace"], row["name"]] == result.key.split("/")[:2]
