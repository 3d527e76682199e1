"""The tree a commit is made of, worked out from HEAD's trees and the staged changes
(renderer.git.gittrees), is the tree `git write-tree` writes of the index: over generated trees and
changes (files edited, added, removed, whole folders gone, a file turned into a folder and back),
in real repositories."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.git import commits
from renderer.git.runner import Repo

NAMES = st.sampled_from(["a", "b", "b-c", "b.c", "b0", "kustomization.yaml", "z"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
TEXTS = st.sampled_from(["one\n", "two\n", ""])


def _git(work: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=work,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _place(work: Path, files: dict[str, str]) -> dict[str, str]:
    """Write `files` (a later path that needs a file's name as a folder, or the other way,
    is left out), returning those written."""
    written: dict[str, str] = {}
    for path, text in files.items():
        parts = path.split("/")
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if prefixes & set(written) or any(w.startswith(f"{path}/") for w in written):
            continue
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written[path] = text
    return written


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(PATHS, TEXTS, min_size=1, max_size=8),
    st.dictionaries(PATHS, st.none() | TEXTS, min_size=1, max_size=6),
    st.booleans(),
)
def test_the_worked_out_tree_is_write_trees(
    before: dict[str, str], changes: dict[str, str | None], executable: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        _git(work, "init", "-q")
        kept = _place(work, before)
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "before")
        for path, text in changes.items():  # removals first, so that a name can change kind
            if text is None and path in kept:
                _git(work, "rm", "-q", "--cached", path)
                (work / path).unlink()
                del kept[path]
        for path in [p for p in kept if any(c.startswith(f"{p}/") for c in changes)]:
            _git(work, "rm", "-q", "--cached", path)  # a file whose name becomes a folder
            (work / path).unlink()
            del kept[path]
        for path in [p for p in changes if changes[p] is not None]:  # a folder becomes a file
            inside = [k for k in kept if k.startswith(f"{path}/")]
            if inside:
                _git(work, "rm", "-q", "--cached", *inside)
                for k in inside:
                    del kept[k]
            if (work / path).is_dir():  # what is left of it: folders its removed files left
                shutil.rmtree(work / path)
        added = _place(work, {p: t for p, t in changes.items() if t is not None})
        for path in added:
            if executable and path.endswith("z"):
                (work / path).chmod(0o755)
        if added:
            _git(work, "add", "-A", "--", *added)
        raw = _git(work, "diff", "--cached", "--raw", "--no-renames", "--no-abbrev", "-z")
        expected = _git(work, "write-tree").strip()

        made = commits.index_tree(Repo(work), raw)

        if raw:
            assert made == expected
        else:
            assert made is None  # nothing staged: nothing to work out
        # what it wrote is in the repository, whole
        if made is not None:
            assert _git(work, "ls-tree", "-r", made) == _git(work, "ls-tree", "-r", expected)
