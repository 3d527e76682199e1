"""The repository with the git wing's jobs as methods, for the code written before the wing
was split (renderer.job, renderer.pipeline, renderer.stamp's callers and the integration tests).

Each method only hands over to the module that does the job: renderer.git.locks (the lock and
recovery), renderer.git.disk (the tree on disk), renderer.git.commits, renderer.git.push. New
code calls those functions with a renderer.git.runner.Repo. `Repo.push(rerender=)`, the push
that calls back into the render after a rejection, goes once renderer.flow drives push_once and
RetryTree itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path

from renderer.git import commits, disk, locks, runner
from renderer.git.disk import DiskTree
from renderer.git.push import PUSH_ATTEMPTS, Pushed, RetryTree, StillRejected, follow, push_once
from renderer.git.writer import TreeWriter


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """A push that went through: the commit a retry made (None: HEAD went as it was), the
    attempts used, and whether HEAD is the commit the remote holds now."""

    made: str | None
    attempts: int
    moved: bool


class Repo(runner.Repo):
    """A work tree (renderer.git.runner.Repo) with the jobs done in it as methods."""

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with locks.locked(self):
            yield

    def git_locks(self) -> list[Path]:
        return locks.git_locks(self)

    def recover_git_locks(self) -> None:
        locks.recover_git_locks(self)

    def recover(self, subdir: str) -> None:
        locks.recover(self, subdir)

    def leftovers(self) -> bool:
        return locks.leftovers(self)

    def scan(self, subdir: str) -> DiskTree:
        return disk.scan(self, subdir)

    def write_tree(
        self,
        subdir: str,
        files: Mapping[str, str],
        current: Mapping[str, str],
        unchanged: Set[str] = frozenset(),
        writer: TreeWriter | None = None,
    ) -> list[str]:
        return disk.write_tree(self, subdir, files, current, unchanged=unchanged, writer=writer)

    def writer(self, subdir: str) -> TreeWriter:
        return disk.tree_writer(self, subdir)

    def commit(
        self,
        subdir: str,
        written: int = 0,
        texts: Mapping[str, str] | None = None,
        touched: Sequence[str] | None = None,
    ) -> str | None:
        return commits.commit(self, subdir, written, texts, touched)

    def _index_tree(self, raw: str) -> str | None:
        return commits.index_tree(self, raw)

    def push(
        self,
        remote: str,
        branch: str,
        subdir: str,
        *,
        rerender: Callable[[], Sequence[str]],
        attempts: int = PUSH_ATTEMPTS,
    ) -> PushOutcome:
        """Push HEAD; after a rejection, render again on the remote's head (in a RetryTree)
        and retry, at most `attempts` pushes in all; once a retry's commit is pushed, the
        branch follows it when that changes nothing outside `subdir` (follow). `rerender`:
        renders `subdir` again as the work tree holds it now (the remote head's), and answers
        the paths in `subdir` it wrote and removed."""
        source, made = "HEAD", None
        for attempt in range(1, attempts + 1):
            answer = push_once(self, remote, branch, source, attempt)
            if isinstance(answer, Pushed):
                return PushOutcome(made, answer.attempt, made is None or follow(self, made, subdir))
            with RetryTree(self, subdir, answer.base) as retry:
                made = source = retry.commit(rerender())
        raise StillRejected(remote, branch, attempts)
