"""A commit of only the paths a render touched (renderer.git.commits.commit with `touched`: git compares just
those paths with HEAD, and asks apart about anything staged outside the tree) is the commit
`git add -A` of the whole tree makes: the same tree, message, index and status, over generated
trees and changes (files edited, added, removed, whole folders gone), with and without a file a
person staged outside the tree, and with the paths compared by name or, beyond the limit, the
whole index; in real repositories."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.git import commits, disk
from renderer.git.runner import Repo
from tests.support.gitrepo import write_tree

FOLDERS = st.sampled_from(["team00/a", "team00/b", "team01/a", "team01/a-b", "team01/a.b"])
NAMES = st.sampled_from(["kustomization.yaml", "deployment-a.yaml", "service.yaml"])
PATHS = st.one_of(st.tuples(FOLDERS, NAMES).map("/".join), NAMES, st.just("team00/x.yaml"))
TEXTS = st.sampled_from(["one\n", "two\n", ""])
# a render's tree always holds its kustomization at the top
TREES = st.dictionaries(PATHS, TEXTS, max_size=10).map(
    lambda files: {"kustomization.yaml": "resources: []\n"} | files
)


def _git(work: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def _state(work: Path) -> tuple[str, ...]:
    return (
        _git(work, "rev-parse", "HEAD^{tree}"),
        _git(work, "log", "-1", "--format=%B"),
        _git(work, "ls-files", "-s"),
        _git(work, "status", "--porcelain", "--untracked-files=all"),
        _git(work, "diff", "--cached", "--name-status"),
    )


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=TREES, after=TREES, staged_outside=st.booleans(), limit=st.sampled_from([0, 1, 500]))
def test_a_commit_of_the_touched_paths_is_the_commit_of_the_whole_tree(
    before: dict[str, str],
    after: dict[str, str],
    staged_outside: bool,
    limit: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commits, "PATHSPEC_LIMIT", limit)
    with tempfile.TemporaryDirectory() as folder:
        one = Path(folder) / "touched"
        repo = Repo.open_or_init(one)
        write_tree(repo, "rendered", before, {})
        (one / "README").write_text("the repository's own\n")
        _git(one, "add", "-A")
        _git(one, "commit", "-q", "--allow-empty", "-m", "before")
        if staged_outside:
            (one / "NOTES").write_text("a person's work in progress\n")
            _git(one, "add", "NOTES")
        other = Path(folder) / "whole"
        shutil.copytree(one, other, symlinks=True)
        results = []
        for work, touched in ((one, True), (other, False)):
            repo = Repo.open_or_init(work)
            written = write_tree(repo, "rendered", after, dict(disk.scan(repo, "rendered")))
            made = commits.commit(repo, "rendered", 0, None, written if touched else None)
            results.append((made is None, _state(work)))

        assert results[0] == results[1]
        if staged_outside:  # never committed, still staged
            assert "NOTES" not in _git(one, "show", "--name-only", "--format=", "HEAD")
            assert "A\tNOTES\n" in _git(one, "diff", "--cached", "--name-status")
