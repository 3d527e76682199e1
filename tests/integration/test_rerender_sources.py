"""Re-renders of sources laid out one file per ModelDeployment (`kubectl apply -R` style), whose
files are keyed by their Stats (renderer.reuse.sourcekeys): once the sources' Stats are
recorded, a render with nothing changed is the stamp's answer; an edit that keeps a file's size
and puts its mtime back is still seen, and the render gives, byte for byte, what a render of
the same sources into a new repository gives."""

from __future__ import annotations

import os
import pickle
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import renderer.flow
from kubeio.yamlio import dump_all
from renderer.flow import render as run_render
from renderer.reuse.sourcekeys import RACY_NS, record_of
from renderer.settings import RenderReport, RenderSettings
from tests.support.builders import model_deployment

SUBDIR = "rendered"


def files_of(repo: Path) -> dict[str, bytes]:
    root = repo / SUBDIR
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def write_sources(src: Path, seqs: int = 128) -> list[Path]:
    """One file per ModelDeployment, a folder per namespace."""
    paths = []
    for i in range(6):
        folder = src / f"team{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"m{i}.yaml"
        md = model_deployment(
            f"m{i}",
            f"team{i % 2}",
            gpu=1,
            provider=("vllm", "llmd")[i % 2],
            engine={"type": "vllm", "extraArgs": [f"--max-num-seqs={seqs}"]},
        )
        path.write_text(dump_all([md]))
        paths.append(path)
    return paths


def recorded(repo: Path) -> set[str]:
    record = record_of(repo / ".git" / "runway-sources")
    assert record is not None
    with record.open("rb") as handle:
        _, _, body = pickle.load(handle)
    entries, _ = pickle.loads(body)
    return set(entries)


def test_an_edit_that_keeps_size_and_mtime_is_rendered_as_a_new_render_renders_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = [0]
    real = renderer.flow.as_usual

    def counted(*args: Any, **kwargs: Any) -> RenderReport:
        done[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(renderer.flow, "as_usual", counted)
    monkeypatch.chdir(tmp_path)  # relative paths, as a person types them
    src = Path("src")
    paths = write_sources(src)
    ask = RenderSettings(sources=("src",), repo="gitops", commit=True, recursive=True)
    run_render(ask)
    # past the window in which a Stat cannot vouch for the bytes (they may change in the same
    # tick): the next render records every source's Stat
    time.sleep(RACY_NS / 1e9 + 0.1)  # ctime cannot be set back: time has to pass, no event
    run_render(ask)
    assert recorded(Path(ask.repo)) == {str(p) for p in paths}
    done[0] = 0
    run_render(ask)
    assert done[0] == 0  # the stamp's answer: nothing read but Stats

    edited = paths[3]
    before = edited.stat()
    edited.write_text(edited.read_text().replace("=128", "=512"))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (edited.stat().st_size, edited.stat().st_mtime_ns) == (
        before.st_size,
        before.st_mtime_ns,
    )
    again = run_render(ask)
    assert done[0] == 1
    # the other files' Stats stay recorded (the edited one is racy: read again next time)
    assert recorded(Path(ask.repo)) >= {str(p) for p in paths if p != edited}
    assert [r.key for r in again.results if r.key.endswith("/m3")] == ["team1/m3"]

    fresh = RenderSettings(sources=("src",), repo="fresh", commit=True, recursive=True)
    run_render(fresh)
    assert files_of(Path(ask.repo)) == files_of(Path(fresh.repo))
    assert b"--max-num-seqs=512" in b"".join(files_of(Path(ask.repo)).values())
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ask.repo, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""
