"""Pushing a render's commit, never forced, and the tree a render retries in when the push is
rejected.

push_once pushes once; a push refused as not a fast-forward fetches the remote's head and
answers Rejected with it. The caller then renders again on that head inside a RetryTree: the
output folder in the work tree is made the head's, the render writes it, and RetryTree.commit
makes the commit of it on the head through a private index, so that nothing else in the work
tree, the repository's index or its refs changes while it works. Once such a commit is pushed,
`follow` moves the branch to it when that changes nothing outside the output folder.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from renderer.git.commits import commit_message
from renderer.git.gittrees import staged_changes
from renderer.git.locks import RETRY_INDEX
from renderer.git.runner import LOG_NAME, GitError, Repo

PUSH_ATTEMPTS = 5  # pushes of one render, the first and its retries
log = logging.getLogger(LOG_NAME)


@dataclass(frozen=True, slots=True)
class Pushed:
    """The remote holds the commit pushed now, at the `attempt`-th push of the render."""

    attempt: int


@dataclass(frozen=True, slots=True)
class Rejected:
    """The push was refused as not a fast-forward; the remote's head, `base` (FETCH_HEAD's
    commit), was fetched."""

    base: str


class StillRejected(GitError):
    """Every push of a render was rejected."""

    def __init__(self, remote: str, branch: str, attempts: int = PUSH_ATTEMPTS) -> None:
        super().__init__(f"git push to {remote}/{branch} still rejected after {attempts} attempts")


def push_once(
    repo: Repo, remote: str, branch: str, source: str = "HEAD", attempt: int = 1
) -> Pushed | Rejected:
    """One `git push` of `source` to `branch` of `remote`, never forced. A rejection fetches
    the remote's branch and answers Rejected with its head; any other failure is a GitError."""
    pushed = repo.git("push", "-q", remote, f"{source}:refs/heads/{branch}", check=False)
    if pushed.returncode == 0:
        return Pushed(attempt)
    if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
        raise GitError(f"git push failed: {pushed.stderr.strip().splitlines()[-1:]}")
    repo.git("fetch", "-q", remote, branch)
    base = repo.git("rev-parse", "--verify", "FETCH_HEAD^{commit}").stdout.strip()
    return Rejected(base)


class RetryTree:
    """The private index of a render retried on `base` (the remote's head). Entered, `subdir`
    in the work tree (and in the private index, a copy of the repository's, so that git knows
    the files' stats) is `base`'s; the render then writes it, and `commit` makes the commit
    of it on `base`. Nothing else in the work tree, the index or the refs changes. Left, the
    private index is gone."""

    def __init__(self, repo: Repo, subdir: str, base: str) -> None:
        self.repo, self.subdir, self.base = repo, subdir, base
        self.top = subdir.strip("/")
        self.index = repo.git_dir / RETRY_INDEX

    def __enter__(self) -> RetryTree:
        try:
            self._restore()
        except BaseException:
            self.index.unlink(missing_ok=True)
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.index.unlink(missing_ok=True)

    def _restore(self) -> None:
        """The private index, a copy of the repository's, and `subdir` made `base`'s in it and
        in the work tree: restored, or removed when `base` has no such folder."""
        repo, index = self.repo, self.index
        real = Path(repo.git("rev-parse", "--git-path", "index").stdout.strip())
        for stale in (index, index.with_name(f"{RETRY_INDEX}.lock")):
            stale.unlink(missing_ok=True)
        if (repo.work / real).is_file():
            shutil.copyfile(repo.work / real, index)
        spec = f":(literal){self.top}"
        held = repo.git("rev-parse", "-q", "--verify", f"{self.base}:{self.top}", check=False)
        if held.returncode:
            repo.git("rm", "-r", "-q", "-f", "--ignore-unmatch", "--", spec, index=index)
        else:
            source = f"--source={self.base}"
            repo.git("restore", source, "--staged", "--worktree", "--", spec, index=index)

    def commit(self, touched: Sequence[str], trailers: str = "") -> str:
        """The commit on `base` of `subdir` as the render left it, `touched` (paths in `subdir`)
        being what it wrote and removed; `base` itself when it holds that tree already."""
        repo, index, base = self.repo, self.index, self.base
        if touched:
            paths = "".join(f"{self.top}/{path}\0" for path in touched)
            repo.git("update-index", "--add", "--remove", "-z", "--stdin", stdin=paths, index=index)
        found = repo.git("write-tree", f"--prefix={self.top}/", check=False, index=index)
        tree = _grafted(
            repo, base, self.top, found.stdout.strip() if found.returncode == 0 else None
        )
        if tree == repo.git("rev-parse", f"{base}^{{tree}}").stdout.strip():
            return base
        raw = repo.git("diff-tree", "-r", "--raw", "--no-renames", "--no-abbrev", "-z", base, tree)
        listed = staged_changes(raw.stdout) or []
        message = commit_message([f"{s}\t{p}" for s, p in listed], self.subdir, trailers)
        made: str = repo.git("commit-tree", tree, "-p", base, "-F", "-", stdin=message).stdout
        return made.strip()


def _grafted(repo: Repo, base: str, top: str, sub: str | None) -> str:
    """The tree of `base` with `sub` (None: nothing) at the folder `top`: one ls-tree and
    one mktree for each folder on the way (names as bytes: any a tree may hold)."""
    parts = top.split("/")
    node = sub
    for depth in range(len(parts) - 1, -1, -1):
        prefix = "/".join(parts[:depth])
        held = repo.git("cat-file", "-t", f"{base}:{prefix}", check=False).stdout.strip()
        listed = repo.output("ls-tree", "-z", f"{base}:{prefix}") if held == "tree" else b""
        name = parts[depth].encode()
        entries = [e for e in listed.split(b"\0") if e and e.split(b"\t", 1)[1] != name]
        if node is not None:
            entries.append(b"040000 tree " + node.encode() + b"\t" + name)
        made = repo.output("mktree", "-z", stdin=b"".join(e + b"\0" for e in entries))
        node = made.decode().strip() if entries or depth == 0 else None
    return node or ""


def follow(repo: Repo, made: str, subdir: str) -> bool:
    """Move the branch to `made` (a retry's commit, pushed) when that changes nothing
    outside `subdir`: HEAD's tree and `made`'s differ only there. Then the index takes
    `made`'s entries in `subdir` (the work tree holds them already) and keeps every other
    entry as it is. Otherwise the branch and the index stay (the remote holds changes
    outside `subdir` that the work tree does not: `git pull` brings them)."""
    outside = f":(exclude,literal){subdir.strip('/')}"
    head = repo.head()
    before = head or repo.git("mktree", stdin="").stdout.strip()
    same = repo.git("diff-tree", "--quiet", "-r", before, made, "--", ".", outside, check=False)
    if same.returncode != 0:
        log.warning(
            "the remote holds changes outside %s; the branch stays at %s (pushed %s: git pull)",
            subdir,
            head,
            made,
        )
        return False
    # The index first: when git cannot take it (a person's git holds it), nothing moves.
    taken = repo.git("reset", "-q", made, "--", f":(literal){subdir.strip('/')}", check=False)
    if taken.returncode != 0:
        log.warning("the index is busy; the branch stays at %s (pushed %s)", head, made)
        return False
    repo.git("update-ref", "-m", "runway render: push retry", "HEAD", made, head or "0" * len(made))
    return True
