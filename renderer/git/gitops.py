"""The repository with the git wing's jobs as methods, for the code written before the wing
was split (renderer.job, renderer.pipeline and the integration tests).

Each method is the function of the module that does the job, called with the repository:
renderer.git.locks (the lock and recovery), renderer.git.disk (the tree on disk),
renderer.git.commits, renderer.git.push. New code calls those functions with a
renderer.git.runner.Repo. `Repo.push(rerender=)`, the push that calls back into the render after
a rejection, goes once renderer.flow drives push_once and RetryTree itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass

from renderer.git import commits, disk, locks, runner
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

    locked = locks.locked
    git_locks = locks.git_locks
    recover_git_locks = locks.recover_git_locks
    recover = locks.recover
    leftovers = locks.leftovers
    scan = disk.scan
    writer = disk.tree_writer
    commit = commits.commit
    _index_tree = commits.index_tree

    def write_tree(
        self,
        subdir: str,
        files: Mapping[str, str],
        current: Mapping[str, str],
        unchanged: Set[str] = frozenset(),
        writer: TreeWriter | None = None,
    ) -> list[str]:
        """disk.write_tree, with a writer of its own for `subdir` when none is given."""
        if writer is not None:
            return disk.write_tree(writer, files, current, unchanged)
        with disk.tree_writer(self, subdir) as own:
            return disk.write_tree(own, files, current, unchanged)

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
