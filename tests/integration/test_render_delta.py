"""A render of the namespaces whose source files changed (renderer.reuse.delta) gives what a render of
everything gives: after any series of edits to several source files (objects changed, added,
removed, moved between files, broken and fixed, defined twice, comments), the tree, HEAD's tree
and the report equal a --full render's in a twin repository; and an edit of one file renders
only its namespaces, leaving every other folder unread and untouched."""

from __future__ import annotations

import copy
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import renderer.reuse.delta
import renderer.stages
from kubeio.yamlio import dump_all
from renderer.flow import render as run_render
from renderer.settings import RenderReport, RenderSettings
from tests.support.builders import model_deployment

SUBDIR = "rendered"
# file -> its objects: (name, namespace, max-num-seqs, provider, valid)
Objects = dict[str, list[tuple[str, str, int, str, bool]]]
START: Objects = {
    "a.yaml": [("m0", "team0", 128, "vllm", True), ("m1", "team1", 128, "llmd", True)],
    "b.yaml": [("m2", "team1", 128, "vllm", True), ("m3", "team2", 128, "vllm", True)],
    "c.yaml": [("m4", "team3", 128, "llmd", True), ("m5", "team3", 128, "vllm", True)],
}
FILES = sorted(START)


class Deltas:
    """Counts the renders restricted to some namespaces (renderer.stages.widened is called once
    for each), the behaviour of every render unchanged."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.done = 0
        real = renderer.reuse.delta.widened

        def counted(*args: Any) -> Any:
            self.done += 1
            return real(*args)

        monkeypatch.setattr(renderer.stages, "widened", counted)


def _write(src: Path, objects: Objects, comments: dict[str, int]) -> None:
    for name in FILES:
        text = dump_all(
            model_deployment(
                md,
                namespace,
                gpu=1,
                model_id="org/model" if valid else None,
                provider=provider,
                engine={"type": "vllm", "extraArgs": [f"--max-num-seqs={seqs}"]},
            )
            for md, namespace, seqs, provider, valid in objects[name]
        )
        (src / name).write_text(text + "# note\n" * comments.get(name, 0))


def _step(objects: Objects, comments: dict[str, int], what: str, a: int, b: int) -> None:
    """One edit of the sources; a and b pick the file and the object."""
    source, target = FILES[a % 3], FILES[b % 3]
    held = objects[source]
    if what == "comment":
        comments[source] = comments.get(source, 0) + 1
    elif what == "add":
        held.append((f"n{a}x{b}", f"team{b % 5}", 128, "vllm", True))
    elif held and what == "edit":
        md, namespace, seqs, provider, valid = held[b % len(held)]
        held[b % len(held)] = (md, namespace, seqs + 1, provider, valid)
    elif held and what == "remove":
        held.pop(b % len(held))
    elif held and what == "move":
        objects[target].append(held.pop(b % len(held)))
    elif held and what in ("break", "fix"):
        md, namespace, seqs, provider, _ = held[b % len(held)]
        held[b % len(held)] = (md, namespace, seqs, provider, what == "fix")
    elif held and what == "twice":
        objects[target].append(held[b % len(held)])


STEPS = st.tuples(
    st.sampled_from(["edit", "add", "remove", "move", "break", "fix", "twice", "comment"]),
    st.integers(min_value=0, max_value=30),
    st.integers(min_value=0, max_value=30),
)


def _files(repo: Path) -> dict[str, bytes]:
    root = repo / SUBDIR
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def _said(report: RenderReport) -> tuple[Any, ...]:
    """Everything a report says but how many results were reused (a --full render reuses
    none), each result with the names of its files."""
    results = [
        (r.key, sorted(r.files), r.error, r.warnings, r.engine, r.provider, r.schemas)
        for r in report.results
    ]
    return results, dict(report.changes), report.removals, report.schema_sources


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=6))
def test_after_any_edits_of_some_source_files_the_render_equals_a_full_render(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]]
) -> None:
    """(Counted once by hand: 32 of 50 steps rendered only some namespaces; the others were
    renders as usual, after a failure withheld removals.)"""
    base = tmp_path_factory.mktemp("delta")
    src = base / "src"
    src.mkdir()
    objects, comments = copy.deepcopy(START), dict[str, int]()
    _write(src, objects, comments)
    ask = RenderSettings(sources=(str(src),), repo=str(base / "gitops"), commit=True)
    full = replace(ask, repo=str(base / "full"), full=True)
    run_render(ask)
    run_render(full)
    for what, a, b in steps:
        _step(objects, comments, what, a, b)
        _write(src, objects, comments)
        got, want = run_render(ask), run_render(full)

        assert _files(Path(ask.repo)) == _files(Path(full.repo))
        assert _git(Path(ask.repo), "rev-parse", f"HEAD:{SUBDIR}") == _git(
            Path(full.repo), "rev-parse", f"HEAD:{SUBDIR}"
        )
        assert _said(got) == _said(want)
        assert _git(Path(ask.repo), "status", "--porcelain") == ""


def test_an_edit_of_one_file_renders_only_its_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    objects, comments = copy.deepcopy(START), dict[str, int]()
    _write(src, objects, comments)
    ask = RenderSettings(sources=(str(src),), repo=str(tmp_path / "gitops"), commit=True)
    first = run_render(ask)
    others = {
        p: p.stat().st_mtime_ns
        for p in (tmp_path / "gitops" / SUBDIR).rglob("*")
        if "team3" in str(p)
    }
    deltas = Deltas(monkeypatch)
    _step(objects, comments, "edit", 0, 0)  # m0 in team0, of a.yaml (team0 and team1)
    _write(src, objects, comments)

    report = run_render(ask)

    assert deltas.done == 1
    assert report.changes == {
        "added": [],
        "changed": ["team0/m0/deployment-m0.yaml", "team0/m0/modeldeployment.yaml"],
        "removed": [],
    }
    assert report.reused == len(first.results) - 1  # only m0 rendered
    assert {
        p: p.stat().st_mtime_ns
        for p in (tmp_path / "gitops" / SUBDIR).rglob("*")
        if "team3" in str(p)
    } == others
