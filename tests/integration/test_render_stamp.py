"""The render stamp (renderer.reuse.stamp): a render that would change nothing is answered from the
stamp, with the report a render gives, and nothing written or committed; after any change to
the tree (edited, deleted, added, ignored, staged or committed by hand) or to any input (a
source, a provider config, a setting, the working directory), the render is done as usual and
gives what a render of everything gives, byte for byte; a rejected push falls back to a
render against the remote's head."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import renderer.flow
from cli.main import main
from core.rendering.inferencegateway import GatewayTarget
from kubeio.shipped import bundled_config_objects
from kubeio.yamlio import dump_all
from renderer.flow import render as run_render
from renderer.git import disk
from renderer.git.runner import Repo
from renderer.reuse.cleantree import CleanCheck
from renderer.reuse.rendercache import RenderCache, unpacked
from renderer.reuse.stamp import STAMP_FORMAT, Stamp, stamp_path
from renderer.reuse.store import cache_key
from renderer.settings import RenderReport, RenderSettings
from tests.support.builders import model_deployment
from tests.support.gitserver import start_git_server
from tests.support.hostile_render import laughs

SUBDIR = "rendered"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def files_of(repo: Path) -> dict[str, bytes]:
    root = repo / SUBDIR
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def deployments(seqs: int = 128, count: int = 4) -> str:
    return dump_all(
        model_deployment(
            f"m{i}",
            f"team{i % 2}",
            gpu=1,
            provider=("vllm", "llmd")[i % 2],
            engine={"type": "vllm", "extraArgs": [f"--max-num-seqs={seqs}"]},
        )
        for i in range(count)
    )


def summary(report: RenderReport) -> tuple[Any, ...]:
    """Everything a report says, each result with the names of its files."""
    results = [
        (r.key, sorted(r.files), r.error, r.warnings, r.engine, r.provider, r.schemas)
        for r in report.results
    ]
    return (results, dict(report.changes), report.removals, report.reused, report.schema_sources)


class Renders:
    """Counts the renders done as usual (renderer.flow.as_usual), the rest being stamp answers."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.done = 0
        real = renderer.flow.as_usual

        def counted(*args: Any, **kwargs: Any) -> RenderReport:
            self.done += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(renderer.flow, "as_usual", counted)


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> Renders:
    return Renders(monkeypatch)


@pytest.fixture
def rendered(tmp_path: Path) -> Iterator[tuple[RenderSettings, RenderReport]]:
    """Sources, a repository with their committed render, its stamp, and the settings."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "mds.yaml").write_text(deployments())
    ask = RenderSettings(sources=(str(src),), repo=str(tmp_path / "gitops"), commit=True)
    first = run_render(ask)
    assert stamp_path(Path(ask.repo) / ".git", ask).is_file()
    yield ask, first


def test_an_unchanged_render_is_the_stamp_and_reports_what_a_render_reports(
    rendered: tuple[RenderSettings, RenderReport], renders: Renders
) -> None:
    ask, first = rendered
    repo = Path(ask.repo)
    head, before = git(repo, "rev-parse", "HEAD"), files_of(repo)
    mtimes = {p: p.stat().st_mtime_ns for p in (repo / SUBDIR).rglob("*")}

    answered = run_render(ask)
    assert renders.done == 0  # nothing parsed, rendered, written or committed
    stamp_path(repo / ".git", ask).unlink()
    usual = run_render(ask)  # the same render, done as usual

    assert renders.done == 1
    assert summary(answered) == summary(usual)
    assert summary(answered)[3] == len(first.results)  # every object reused
    assert all(dict(r.files) for r in answered.results)  # and its files read from disk
    assert {r.key: dict(r.files) for r in answered.results} == {
        r.key: dict(r.files) for r in first.results
    }
    assert (git(repo, "rev-parse", "HEAD"), files_of(repo)) == (head, before)
    assert {p: p.stat().st_mtime_ns for p in (repo / SUBDIR).rglob("*")} == mtimes


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "# edited\n")


def _edit_same_size_and_mtime(path: Path) -> None:
    before, text = path.stat(), path.read_text()
    path.write_text(text[:-2] + ("xx" if text[-2:] != "xx" else "yy"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _tree_change(repo: Path, what: str, index: int) -> None:
    """One hand change to the rendered tree (or to the index or HEAD over it)."""
    paths = sorted(p for p in (repo / SUBDIR).rglob("*") if p.is_file())
    path = paths[index % len(paths)]
    # a stray file goes in an object's folder (one beside the folders is a person's: it stays)
    folder = [p for p in paths if len(p.relative_to(repo / SUBDIR).parts) == 3][index % 8].parent
    if what == "edit":
        _edit(path)
    elif what == "same size and mtime":
        _edit_same_size_and_mtime(path)
    elif what == "delete":
        path.unlink()
    elif what == "untracked":
        (folder / f"stray-{index}.yaml").write_text("kind: Stray\n")
    elif what == "ignored":
        (repo / ".gitignore").write_text("*.ignored\n")
        (folder / f"x{index}.ignored").write_text("kind: Stray\n")
    elif what == "staged":
        _edit(path)
        git(repo, "add", "-f", "--", str(path))
    elif what == "committed":
        _edit(path)
        git(repo, "add", "-f", "--", str(path))
        git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "by hand")
    elif what == "touched":  # the same bytes, a new mtime: git settles it by content
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))


CHANGES = st.tuples(
    st.sampled_from(
        [
            "edit",
            "same size and mtime",
            "delete",
            "untracked",
            "ignored",
            "staged",
            "committed",
            "touched",
        ]
    ),
    st.integers(min_value=0, max_value=100),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=st.lists(CHANGES, min_size=1, max_size=4))
def test_after_any_hand_change_to_the_tree_the_render_is_a_full_render(
    rendered: tuple[RenderSettings, RenderReport],
    renders: Renders,
    tmp_path_factory: pytest.TempPathFactory,
    changes: list[tuple[str, int]],
) -> None:
    """The render gives what --full gives on a twin of the repository (the tree, HEAD's tree
    there, the results), and commits it all; only a change git settles as none
    (a touch) is answered from the stamp. (A hand-edited hydrated file is an input: stickiness
    reads it, so the tree is not simply put back.)"""
    ask, _ = rendered
    base = tmp_path_factory.mktemp("copy")
    work, twin = base / "gitops", base / "twin" / "gitops"
    shutil.copytree(ask.repo, work, symlinks=True)
    for path in (work / SUBDIR).rglob("*"):  # as a clone or a render leaves them: mtime new
        os.utime(path)  # (git here compares whole seconds: see renderer.reuse.stamp)
    here = replace(ask, repo=str(work))
    run_render(here)  # the repository moved: a render as usual, stamped for this place
    renders.done = 0

    for what, index in changes:
        _tree_change(work, what, index)
    shutil.copytree(work, twin, symlinks=True)
    report = run_render(here)
    want = run_render(replace(here, repo=str(twin), full=True))

    assert files_of(work) == files_of(twin)
    assert git(work, "rev-parse", f"HEAD:{SUBDIR}") == git(twin, "rev-parse", f"HEAD:{SUBDIR}")
    # everything committed (an ignored file in a failed object's folder, kept as it was, stays)
    assert git(work, "status", "--porcelain", "--", SUBDIR) == ""
    assert summary(report)[0] == summary(want)[0]
    done = renders.done
    assert done == (1 if {w for w, _ in changes} == {"touched"} else 2)
    # A file git ignores, in the folder of an object that failed (a hand-edited hydrated file
    # can make it fail), is kept with the folder: git status shows it, so no stamp answers.
    left = git(work, "status", "--porcelain", "--ignored", "--untracked-files=all", "--", SUBDIR)
    assert not left or any(r.error is not None for r in report.results)
    assert run_render(here).changes == {"added": [], "changed": [], "removed": []}
    assert renders.done == done + (1 if left else 0)  # else the render after it is the stamp


def _input_change(ask: RenderSettings, what: str, step: int) -> RenderSettings:
    src = Path(ask.sources[0])
    if what == "source":
        (src / "mds.yaml").write_text(deployments(seqs=100 + step))
    elif what == "source, the same bytes":
        (src / "mds.yaml").write_bytes((src / "mds.yaml").read_bytes())
    elif what == "another source":
        (src / f"more{step}.yaml").write_text(
            dump_all([model_deployment(f"x{step}", "team9", gpu=1, provider="vllm")])
        )
    elif what == "providers":
        configs = Path(ask.repo).parent / "configs.yaml"
        objects = bundled_config_objects()
        if step % 2:  # Direct vLLM no longer offered: its objects go elsewhere or fail
            objects = [c for c in objects if c["metadata"]["name"] != "vllm"]
        configs.write_text(dump_all(objects))
        return replace(ask, providers=(str(configs),))
    elif what == "gateway":
        return replace(ask, gateway=GatewayTarget(f"gw{step % 2}", "gateways", False))
    elif what == "max removals":
        return replace(ask, max_removals=step % 3)
    return ask


INPUTS = st.sampled_from(
    ["source", "source, the same bytes", "another source", "providers", "gateway", "max removals"]
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(INPUTS, min_size=1, max_size=4))
def test_after_any_change_of_inputs_the_render_equals_a_full_render(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """Each step changes one input (or rewrites the same bytes) and renders, stamp and all; a
    second repository renders the same with --full each time: the trees and the results agree
    after every step, and a step that changed nothing is answered from the stamp."""
    base = tmp_path_factory.mktemp("inputs")
    src = base / "src"
    src.mkdir()
    (src / "mds.yaml").write_text(deployments())
    ask = RenderSettings(sources=(str(src),), repo=str(base / "gitops"), commit=True)
    full = replace(ask, repo=str(base / "full"), full=True)
    run_render(ask)
    run_render(full)
    for step, what in enumerate(steps):
        ask = _input_change(ask, what, step)
        full = replace(ask, repo=full.repo, full=True)
        got, want = run_render(ask), run_render(full)

        assert files_of(Path(ask.repo)) == files_of(Path(full.repo))
        assert summary(got)[0] == summary(want)[0]
        assert summary(got)[2] == summary(want)[2] or want.removals.removed


def test_the_stamp_follows_the_working_directory(
    rendered: tuple[RenderSettings, RenderReport],
    renders: Renders,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Relative sources name other files from another directory: not the stamp's inputs."""
    ask, _ = rendered
    root = Path(ask.sources[0]).parent
    monkeypatch.chdir(root)
    relative = replace(ask, sources=("src",))
    run_render(relative)  # a first render with relative paths: new inputs, rendered as usual
    assert renders.done == 1
    run_render(relative)
    assert renders.done == 1  # answered from the stamp
    other = root / "elsewhere"
    (other / "src").mkdir(parents=True)
    (other / "src" / "mds.yaml").write_text(deployments(seqs=64))
    monkeypatch.chdir(other)
    report = run_render(relative)

    assert renders.done == 2
    assert (
        "--max-num-seqs=64" in (Path(ask.repo) / SUBDIR / "team0/m0/deployment-m0.yaml").read_text()
    )
    assert report.changes["changed"]


@pytest.mark.parametrize("garbage", [b"", b"\x80\x04not a pickle", b"\x80\x04K\x07."])
def test_an_unreadable_stamp_means_a_render_as_usual(
    rendered: tuple[RenderSettings, RenderReport], renders: Renders, garbage: bytes
) -> None:
    ask, first = rendered
    stamp_path(Path(ask.repo) / ".git", ask).write_bytes(garbage)

    report = run_render(ask)

    assert renders.done == 1
    assert [r.key for r in report.results] == [r.key for r in first.results]
    assert stamp_path(Path(ask.repo) / ".git", ask).read_bytes() != garbage  # written anew


def test_a_render_that_does_not_commit_leaves_no_stamp(
    rendered: tuple[RenderSettings, RenderReport], renders: Renders
) -> None:
    """Its tree is not HEAD's: the stamp goes, and the next render is done as usual."""
    ask, _ = rendered
    (Path(ask.sources[0]) / "mds.yaml").write_text(deployments(seqs=7))
    run_render(replace(ask, commit=False))
    assert not stamp_path(Path(ask.repo) / ".git", ask).exists()
    run_render(replace(ask, commit=False))
    assert renders.done == 2


def test_a_rejected_push_renders_against_the_remote_head(tmp_path: Path, renders: Renders) -> None:
    """The stamp answers, the push is refused (the remote moved on): the render is done as usual
    on the remote's head and pushed, keeping the other commit."""
    server = start_git_server(tmp_path / "server")
    try:
        url = server.create("gitops")
        src = tmp_path / "src"
        src.mkdir()
        (src / "mds.yaml").write_text(deployments())
        ask = RenderSettings(
            sources=(str(src),), repo=str(tmp_path / "a"), push="origin", branch="main"
        )
        subprocess.run(["git", "clone", "-q", url, ask.repo], check=True, capture_output=True)
        run_render(ask)
        run_render(ask)
        assert renders.done == 1  # the second: the stamp, and a push with nothing new
        other = tmp_path / "b"
        subprocess.run(["git", "clone", "-q", url, str(other)], check=True)
        (other / "README.md").write_text("the platform team's\n")
        git(other, "add", "README.md")
        git(other, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "readme")
        git(other, "push", "-q", "origin", "HEAD:main")

        report = run_render(ask)

        assert renders.done == 2
        check = tmp_path / "c"
        subprocess.run(["git", "clone", "-q", url, str(check)], check=True)
        assert (check / "README.md").is_file()
        assert files_of(check) == files_of(Path(ask.repo))
        assert report.committed == git(check, "rev-parse", "HEAD").strip()
        # The remote changed a file outside the output folder: the user's work tree does not
        # get it from a render (the branch stays; `git pull` brings it), issue #40 item 4.
        assert not (Path(ask.repo) / "README.md").exists()
    finally:
        server.stop()


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.binary(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fields=st.lists(VALUES, min_size=0, max_size=7),
    rows=st.lists(
        st.lists(VALUES, min_size=8, max_size=8).map(tuple)
        | st.tuples(
            st.text(max_size=3),
            st.lists(st.text(max_size=3), max_size=2).map(tuple),
            st.none() | st.text(max_size=3),
            st.just(()),
            st.none(),
            st.none(),
            st.just(()),
            VALUES,
        ),
        max_size=3,
    ),
    shape=st.booleans(),
)
def test_a_stamp_of_any_shape_loads_as_a_stamp_of_its_types_or_as_none(
    tmp_path_factory: pytest.TempPathFactory,
    fields: list[Any],
    rows: list[list[Any]],
    shape: bool,
) -> None:
    """Whatever the file holds (the right format number and any values, rows of eight fields
    of any type): a Stamp whose every field has its type, or None; never an exception."""
    path = tmp_path_factory.mktemp("stamps") / "stamp.pickle"
    if shape:  # the digests right, the report of any values
        header = (STAMP_FORMAT, "fp", "in", "tree", "frame", ())
        data = pickle.dumps(header) + pickle.dumps((rows, (*fields[:3], 0)))
    else:
        data = pickle.dumps((STAMP_FORMAT, *fields[:3])) + pickle.dumps(tuple(fields[3:]))
    path.write_bytes(data)

    stamp = Stamp.load(path)

    if stamp is not None:
        assert all(isinstance(v, str) for v in (stamp.fingerprint, stamp.inputs, stamp.tree))
        for key, names, error, warnings, engine, provider, schemas, line in stamp.rows:
            assert all(isinstance(t, str) for t in (key, *names, *warnings, line))
            assert all(o is None or isinstance(o, str) for o in (error, engine, provider))
            assert all(isinstance(k, str) and isinstance(o, str) for k, o in schemas)
        assert isinstance(stamp.removals.outside, int)
        assert [r.key for r in stamp.results(path.parent)] == [row[0] for row in stamp.rows]


def test_a_stamp_round_trips(rendered: tuple[RenderSettings, RenderReport]) -> None:
    ask, first = rendered
    path = stamp_path(Path(ask.repo) / ".git", ask)
    stamp = Stamp.load(path)
    assert stamp is not None
    again = path.with_name("again.pickle")
    stamp.save(again)

    assert Stamp.load(again) == stamp
    assert Stamp.load(again, stamp.inputs) == stamp
    assert Stamp.load(again, "other inputs") is None
    again.write_bytes(again.read_bytes()[: len(again.read_bytes()) // 2])  # the report cut off
    assert Stamp.load(again, "other inputs") is None
    assert Stamp.load(again, stamp.inputs) is None
    assert [(r.key, sorted(r.files), r.error) for r in stamp.results(Path(ask.repo) / SUBDIR)] == [
        (r.key, sorted(r.files), r.error) for r in first.results
    ]


HOSTILE_SOURCES = [
    "",  # names nothing
    "x" * 300,  # too long for the file system
    "../../../../nope",  # climbs out, to nothing
    "outside",  # a folder whose file is a link out of it
    "laughs.yaml",  # aliases that expand past the bound
    "huge.yaml",  # one value of 4 MiB
    "src/../src",  # the stamped source, named another way
    "*.yaml",  # a glob the shell did not expand
]


@pytest.mark.parametrize("source", HOSTILE_SOURCES)
def test_a_hostile_source_gets_from_a_stamped_repository_what_it_gets_from_any(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    renders: Renders,
    source: str,
) -> None:
    """With a stamp in place, each mistaken or hostile SOURCE is answered as in a repository
    without one (the same exit status and the same lines), never with a traceback, and the
    stamped output is all still there (nothing lost)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mds.yaml").write_text(deployments())
    (tmp_path / "laughs.yaml").write_text(laughs(depth=9, width=10))
    huge = model_deployment("huge", "team0", gpu=1, provider="vllm")
    huge["metadata"]["annotations"] = {"note": "x" * (4 << 20)}
    (tmp_path / "huge.yaml").write_text(dump_all([huge]))
    (tmp_path / "secret.yaml").write_text("not: yours\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.yaml").symlink_to(tmp_path / "secret.yaml")
    answers = []
    for repo in ("stamped", "plain"):
        assert main(["render", "src", "--repo", repo, "--commit", "-o", "json"], env={}) == 0
        capsys.readouterr()
        if repo == "plain":
            stamp_path(tmp_path / repo / ".git", RenderSettings(("src",), repo)).unlink()
        before = files_of(tmp_path / repo)
        code = main(["render", source, "--repo", repo, "--commit", "-o", "json"], env={})
        out, err = capsys.readouterr()
        out = re.sub(r'"commit": "[0-9a-f]{40}"', '"commit": "C"', out)  # its own history
        answers.append((code, out.replace(repo, "REPO"), err.replace(repo, "REPO")))

        assert code in (0, 1, 2), err
        assert "Traceback" not in out + err
        after = files_of(tmp_path / repo)
        assert {p: after.get(p) for p in before if "/m" in p} == {
            p: t for p, t in before.items() if "/m" in p
        }  # every stamped object's files, as they were

    assert answers[0] == answers[1]


def test_git_vouches_for_a_clean_tree_as_the_scan_finds_it_and_for_nothing_else(
    rendered: tuple[RenderSettings, RenderReport],
) -> None:
    """renderer.reuse.cleantree: the tree git's index lists, each file with its cache entry's Stat,
    in the scan's paths and order; after a hand edit, an untracked file or a commit by hand
    (HEAD no longer the cache's tree), None: the render scans."""
    ask, _ = rendered
    repo = Repo(Path(ask.repo).resolve())
    cache = RenderCache.load(repo.git_dir / f"runway-render-cache-{cache_key(ask)}.pickle")
    scanned = disk.scan(repo, SUBDIR)
    vouched = CleanCheck(repo, SUBDIR).tree(cache)

    assert vouched is not None and list(vouched) == list(scanned)
    recorded = {
        f"{folder}/{name}": stat
        for folder, entry in cache.entries.items()
        for name, stat in (unpacked(entry.stats) if entry.stats else ())
    }
    assert {p: s for p, s in vouched.stats.items() if p in recorded} == recorded
    assert {p: s for p, s in vouched.stats.items() if p not in recorded} == {
        p: s for p, s in scanned.stats.items() if p not in recorded
    }
    folder = repo.work / SUBDIR / "team0" / "m0"
    (folder / "stray.yaml").write_text("kind: Stray\n")
    assert CleanCheck(repo, SUBDIR).tree(cache) is None
    (folder / "stray.yaml").unlink()
    _edit(folder / "modeldeployment.yaml")
    assert CleanCheck(repo, SUBDIR).tree(cache) is None
    git(repo.work, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "by hand")
    assert git(repo.work, "status", "--porcelain") == ""
    assert CleanCheck(repo, SUBDIR).tree(cache) is None
