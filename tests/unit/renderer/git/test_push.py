"""A push without a callback (renderer.git.push), against real repositories: a bare remote, the
render's clone, and a second clone that pushes first. push_once answers Pushed or Rejected with
the remote's head; a RetryTree makes the output folder the remote head's and commits the render's
tree on that head, touching neither the clone's branch nor its index; `follow` moves the branch
to a pushed retry only when nothing outside the output folder differs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from renderer.git.locks import RETRY_INDEX
from renderer.git.push import (
    PUSH_ATTEMPTS,
    Pushed,
    Rejected,
    RetryTree,
    StillRejected,
    follow,
    push_once,
)
from renderer.git.runner import GitError, Repo

START = {"rendered/ns/a.yaml": "a: 1\n", "rendered/ns/b.yaml": "b: 1\n", "README.md": "hello\n"}


def commit_files(repo: Repo, files: Mapping[str, str | None], message: str) -> str:
    """Write (None: remove) `files` in the work tree, commit them all, and answer the commit."""
    for path, text in files.items():
        if text is None:
            repo.git("rm", "-q", "--", path)
            continue
        (repo.work / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.work / path).write_text(text)
        repo.git("add", "--", path)
    repo.git("commit", "-q", "-m", message)
    return repo.git("rev-parse", "HEAD").stdout.strip()


def remote_head(remote: Path) -> str:
    return Repo(remote).git("rev-parse", "main").stdout.strip()


@pytest.fixture(name="remote")
def fixture_remote(tmp_path: Path) -> Path:
    """A bare remote whose main holds START."""
    remote = tmp_path / "remote.git"
    Repo(tmp_path).git("init", "-q", "--bare", "-b", "main", str(remote))
    seed = Repo.open_or_init(tmp_path / "seed")
    commit_files(seed, dict(START), "start")
    seed.git("push", "-q", str(remote), "HEAD:refs/heads/main")
    return remote


def clone(remote: Path, into: Path) -> Repo:
    Repo(into.parent).git("clone", "-q", str(remote), str(into))
    return Repo.open_or_init(into)


def pushed_first(remote: Path, into: Path, files: Mapping[str, str | None]) -> str:
    """Another clone commits `files` and pushes first: the remote's new head."""
    other = clone(remote, into)
    made = commit_files(other, files, "theirs")
    other.git("push", "-q", "origin", "HEAD:refs/heads/main")
    return made


def tree_of(repo: Repo, revision: str) -> str:
    return repo.git("rev-parse", f"{revision}^{{tree}}").stdout.strip()


def tree_with(remote: Path, into: Path, base: str, files: Mapping[str, str | None]) -> str:
    """The tree of `base` with `files` written (None: removed), made by git in a clone of its
    own: what a retry's commit must hold."""
    other = clone(remote, into)
    other.git("checkout", "-q", base)
    return tree_of(other, commit_files(other, files, "expected"))


def test_a_fast_forward_is_pushed(tmp_path: Path, remote: Path) -> None:
    mine = clone(remote, tmp_path / "mine")
    made = commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")

    assert push_once(mine, "origin", "main", attempt=3) == Pushed(3)
    assert remote_head(remote) == made


def test_a_push_behind_the_remote_is_rejected_with_the_remote_head(
    tmp_path: Path, remote: Path
) -> None:
    mine = clone(remote, tmp_path / "mine")
    theirs = pushed_first(remote, tmp_path / "theirs", {"rendered/ns/b.yaml": "b: 2\n"})
    mine_head = commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")

    assert push_once(mine, "origin", "main") == Rejected(theirs)
    assert (remote_head(remote), mine.head()) == (theirs, mine_head)  # nothing forced or moved


def test_a_push_that_fails_otherwise_is_a_git_error(tmp_path: Path) -> None:
    mine = Repo.open_or_init(tmp_path / "mine")
    commit_files(mine, {"README.md": "hello\n"}, "mine")

    with pytest.raises(GitError) as failed:
        push_once(mine, str(tmp_path / "none.git"), "main")

    assert str(failed.value) == "git push failed: ['and the repository exists.']"


def test_a_retry_commits_the_render_on_the_remote_head(tmp_path: Path, remote: Path) -> None:
    mine = clone(remote, tmp_path / "mine")
    base = pushed_first(remote, tmp_path / "theirs", {"rendered/ns/b.yaml": "b: 2\n"})
    mine_head = commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")
    answer = push_once(mine, "origin", "main")
    assert answer == Rejected(base)

    with RetryTree(mine, "rendered", answer.base) as retry:
        seen = {p: (mine.work / "rendered" / p).read_text() for p in ("ns/a.yaml", "ns/b.yaml")}
        (mine.work / "rendered/ns/a.yaml").write_text("a: 3\n")
        (mine.work / "rendered/ns/c.yaml").write_text("c: 1\n")
        made = retry.commit(["ns/a.yaml", "ns/c.yaml"])

    expected = tree_with(
        remote,
        tmp_path / "expected",
        base,
        {"rendered/ns/a.yaml": "a: 3\n", "rendered/ns/c.yaml": "c: 1\n"},
    )
    assert seen == {"ns/a.yaml": "a: 1\n", "ns/b.yaml": "b: 2\n"}  # the remote head's folder
    assert mine.git("rev-list", "--parents", "-n", "1", made).stdout.split() == [made, base]
    assert tree_of(mine, made) == expected
    assert mine.git("log", "-1", "--format=%B", made).stdout == (
        "runway render: 1 added, 1 changed, 0 removed\n\nM ns/a.yaml\nA ns/c.yaml\n\n"
    )
    assert (mine.head(), (mine.git_dir / RETRY_INDEX).exists()) == (mine_head, False)
    assert mine.git("diff", "--cached", "--name-only").stdout == ""  # the index is HEAD's
    assert push_once(mine, "origin", "main", made, attempt=2) == Pushed(2)
    assert remote_head(remote) == made


def test_a_retry_whose_render_is_the_remote_heads_answers_the_head(
    tmp_path: Path, remote: Path
) -> None:
    mine = clone(remote, tmp_path / "mine")
    base = pushed_first(remote, tmp_path / "theirs", {"rendered/ns/a.yaml": "a: 2\n"})
    commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine, the same render")
    assert push_once(mine, "origin", "main") == Rejected(base)

    with RetryTree(mine, "rendered", base) as retry:
        made = retry.commit([])

    assert made == base


def test_a_retry_on_a_head_without_the_output_folder_grafts_it(
    tmp_path: Path, remote: Path
) -> None:
    mine = clone(remote, tmp_path / "mine")
    gone = {"rendered/ns/a.yaml": None, "rendered/ns/b.yaml": None}
    base = pushed_first(remote, tmp_path / "theirs", gone)
    commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")
    assert push_once(mine, "origin", "main") == Rejected(base)

    with RetryTree(mine, "rendered", base) as retry:
        still_there = (mine.work / "rendered").exists()
        (mine.work / "rendered/ns").mkdir(parents=True)
        (mine.work / "rendered/ns/a.yaml").write_text("a: 2\n")
        made = retry.commit(["ns/a.yaml"])

    expected = tree_with(remote, tmp_path / "expected", base, {"rendered/ns/a.yaml": "a: 2\n"})
    assert (still_there, tree_of(mine, made)) == (False, expected)
    assert mine.git("rev-list", "--parents", "-n", "1", made).stdout.split() == [made, base]


def test_a_render_that_fails_in_a_retry_leaves_no_private_index(
    tmp_path: Path, remote: Path
) -> None:
    mine = clone(remote, tmp_path / "mine")
    base = pushed_first(remote, tmp_path / "theirs", {"rendered/ns/b.yaml": "b: 2\n"})
    commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")
    assert push_once(mine, "origin", "main") == Rejected(base)

    with pytest.raises(GitError, match="a render that failed"), RetryTree(mine, "rendered", base):
        held = (mine.git_dir / RETRY_INDEX).is_file()
        raise GitError("a render that failed")

    assert (held, (mine.git_dir / RETRY_INDEX).exists()) == (True, False)


@pytest.mark.parametrize("outside", [False, True], ids=["rendered-only", "remote-file"])
def test_the_branch_follows_a_pushed_retry_only_when_nothing_outside_differs(
    tmp_path: Path, remote: Path, outside: bool
) -> None:
    mine = clone(remote, tmp_path / "mine")
    theirs = {"README.md": "theirs\n"} if outside else {"rendered/ns/b.yaml": "b: 2\n"}
    base = pushed_first(remote, tmp_path / "theirs", theirs)
    mine_head = commit_files(mine, {"rendered/ns/a.yaml": "a: 2\n"}, "mine")
    assert push_once(mine, "origin", "main") == Rejected(base)
    with RetryTree(mine, "rendered", base) as retry:
        (mine.work / "rendered/ns/a.yaml").write_text("a: 2\n")
        made = retry.commit(["ns/a.yaml"])
    assert push_once(mine, "origin", "main", made, attempt=2) == Pushed(2)

    moved = follow(mine, made, "rendered")

    assert (moved, mine.head()) == ((False, mine_head) if outside else (True, made))
    assert mine.git("status", "--porcelain").stdout == ""  # index and work tree are HEAD's


def test_still_rejected_says_how_many_pushes_were_tried() -> None:
    assert str(StillRejected("origin", "main")) == (
        f"git push to origin/main still rejected after {PUSH_ATTEMPTS} attempts"
    )
