"""`runway render -o json`: one result per line, each line json.dumps' text of the result's
row with sorted keys (encoded by one encoder made once, or as the stamp recorded it), and the
whole report the structure -o yaml gives."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.render import _json_report, _payload, summary
from renderer.output.folders import Result, report_line, report_row
from renderer.output.ownership import Removals
from renderer.reuse.stamp import Stamp, recorded_line
from renderer.settings import PushedTo, RenderReport

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


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(RESULTS, max_size=6), st.booleans())
def test_the_report_is_what_sorting_every_mapping_gives(
    tmp_path: Path, results: list[Result], stamped: bool
) -> None:
    """Also when the results are the stamp's (each line as it recorded it)."""
    if stamped:
        stamp = Stamp.of("f", "i", "t", results, Removals())
        stamp.save(tmp_path / "stamp")
        loaded = Stamp.load(tmp_path / "stamp")
        assert loaded is not None
        results = loaded.results(tmp_path)
        assert [recorded_line(r) for r in results] == [report_line(r) for r in results]
    changes = {"added": ["a/b.yaml"], "changed": [], "removed": []}
    report = RenderReport(results, changes, Removals((), (), None, 0), len(results), "abc")
    payload = _payload(report, "out")
    text = _json_report(report, "out")
    assert text == _reference(payload)
    assert json.loads(text) == payload
    for row, result in zip(payload["results"], results, strict=True):
        assert row == report_row(result)
        assert list(row) == sorted(row)
        assert report_line(result) == json.dumps(row, sort_keys=True)
        assert [row["namespace"], row["name"]] == result.key.split("/")[:2]
        assert recorded_line(result) in {None, report_line(result)}


def test_the_summary_names_the_first_failures_and_counts_the_rest() -> None:
    results = [Result(f"ns/m{i}", error="no") for i in range(7)] + [Result("ns/ok", {"a": ""})]
    changes = {"added": ["ns/ok/a"], "changed": [], "removed": []}
    report = RenderReport(results, changes, Removals(), 0, "0123456789abcdef")

    assert summary(report) == (
        "1 rendered (0 unchanged since the last render), 7 failed; files: 1 added, 0 changed, "
        "0 removed; commit 0123456789ab; not rendered: ns/m0, ns/m1, ns/m2, ns/m3, ns/m4 and 2 more"
    )


def test_the_summary_names_a_push_without_the_remotes_credentials() -> None:
    remote = "https://x-access-token:ghp_0123456789abcdefghijklmnopqrstuvwxyz@git.example.com/g.git"
    pushed = PushedTo(remote, "main", "0123456789abcdef", None)
    report = RenderReport([], {"added": [], "changed": [], "removed": []}, Removals(), 0)

    assert summary(replace(report, pushed=pushed)) == (
        "0 rendered (0 unchanged since the last render), 0 failed; files: 0 added, 0 changed, "
        "0 removed; commit 0123456789ab pushed to <redacted>git.example.com/g.git, branch main "
        "(the local HEAD is detached)"
    )
