"""The GitOps repository, through the git CLI: lock, swap the rendered tree in, commit, push.

Safety: the new tree is written aside (inside .git) and swapped in with two renames; a render that
dies between them leaves the previous tree under .git/runway-old-*, which the next render puts
back first. History changes only by `git commit` (an atomic ref update). A lock file held with
flock keeps two renders out of the same repository. Pushes never force: a rejected push fetches,
moves to the remote head, re-renders and tries again, a bounded number of times.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from providers.errors import RunwayError

GIT_TIMEOUT = 120
IDENTITY = ("-c", "user.name=runway", "-c", "user.email=runway@localhost")


class GitError(RunwayError):
    """Git failed or the repository cannot be used (another render holds it, a push kept failing)."""


@dataclass(frozen=True)
class Repo:
    work: Path

    @property
    def git_dir(self) -> Path:
        return self.work / ".git"

    @classmethod
    def open_or_init(cls, path: str | Path) -> Repo:
        work = Path(path).resolve()
        work.mkdir(parents=True, exist_ok=True)
        repo = cls(work)
        if not repo.git_dir.is_dir():
            repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        try:
            done = subprocess.run(
                ["git", *IDENTITY, *args],
                cwd=self.work,
                env=env,
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise GitError(f"git {args[0]}: {err}") from None
        if check and done.returncode != 0:
            raise GitError(
                f"git {args[0]} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
            )
        return done

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive use of the repository for one render; a second render fails at once."""
        with (self.git_dir / "runway.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise GitError(
                    f"{self.work}: another render is running in this repository"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def recover(self, subdir: str) -> None:
        """Undo a swap that a killed render left half done."""
        target = self.work / subdir
        retired = sorted(self.git_dir.glob("runway-old-*"), key=lambda p: p.stat().st_mtime)
        if not target.exists() and retired:
            os.rename(retired[-1], target)
            retired = retired[:-1]
        for leftover in [*retired, *self.git_dir.glob("runway-new-*")]:
            shutil.rmtree(leftover, ignore_errors=True)

    def read_files(self, subdir: str) -> dict[str, str]:
        """The current rendered tree: path relative to `subdir` -> text."""
        root = self.work / subdir
        if not root.is_dir():
            return {}
        return {
            str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    def replace_tree(self, subdir: str, files: Mapping[str, str]) -> None:
        staging = Path(tempfile.mkdtemp(prefix="runway-new-", dir=self.git_dir))
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        target = self.work / subdir
        target.parent.mkdir(parents=True, exist_ok=True)
        retired = self.git_dir / f"runway-old-{uuid.uuid4().hex}"
        if target.exists():
            os.rename(target, retired)
        os.rename(staging, target)
        shutil.rmtree(retired, ignore_errors=True)

    def commit(self, subdir: str) -> str | None:
        """Commit the rendered tree with a message listing what was added, changed and removed
        since the last commit; None (and no commit) when nothing changed."""
        self.git("add", "-A", "--", subdir)
        staged = self.git(
            "diff", "--cached", "--name-status", "--no-renames", "--", subdir
        ).stdout.splitlines()
        if not staged:
            return None
        self.git("commit", "-q", "-m", commit_message(staged, subdir), "--", subdir)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def push(
        self, remote: str, branch: str, *, rerender: Callable[[], None], attempts: int = 5
    ) -> int:
        """Push HEAD; after a rejection, move to the remote head, re-render and retry. Returns the
        number of attempts used."""
        for attempt in range(1, attempts + 1):
            pushed = self.git("push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False)
            if pushed.returncode == 0:
                return attempt
            if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
                raise GitError(f"git push failed: {pushed.stderr.strip().splitlines()[-1:]}")
            self.git("fetch", "-q", remote, branch)
            self.git("reset", "-q", "--hard", "FETCH_HEAD")
            rerender()
        raise GitError(f"git push to {remote}/{branch} still rejected after {attempts} attempts")


def commit_message(name_status: list[str], subdir: str) -> str:
    """ "runway render: N added, N changed, N removed" and one "A|M|D path" line per file."""
    words = {"A": "added", "M": "changed", "D": "removed"}
    counts = dict.fromkeys(words.values(), 0)
    lines = []
    for entry in name_status:
        status, path = entry.split("\t", 1)
        counts[words.get(status[0], "changed")] += 1
        lines.append(f"{status[0]} {path.removeprefix(subdir.rstrip('/') + '/')}")
    summary = ", ".join(f"{n} {word}" for word, n in counts.items())
    return f"runway render: {summary}\n\n" + "\n".join(lines) + "\n"
