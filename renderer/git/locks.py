"""One render at a time in a repository, and what a killed render leaves behind.

A lock file held with flock keeps two renders out of the same repository. While a render holds
it, `.git/runway-render.pid` names the render's process: a render that is killed leaves the
marker behind, which is how the next one knows that git lock files it finds were left by
Runway's own git (cleared, and only when no git process works in the repository) and that the
lock, still held by the killed render's dying workers, is worth waiting for a moment. `recover`
undoes what a killed render left half done: a swap of the tree, temporary files, the private
index of a push retry.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from renderer.git.runner import LOG_NAME, GitError, Repo

MARKER = "runway-render.pid"
RETRY_INDEX = "runway-retry.index"  # in .git: the private index of a push retry
SCRATCH = "runway-tmp"  # in .git: the folder a TreeWriter writes each file in first
PID_MAX = 1 << 22  # Linux's largest process id (PID_MAX_LIMIT)
ASCII_SPACE = " \t\n\r\f\v"  # what bytes.strip() takes away; str.strip() takes more
# How long a render waits for the lock when the render holding it was killed: its pool's workers
# die with it (renderer.output.render) and let go of the lock they inherited a moment later.
KILLED_RENDER_WAIT = 10.0
log = logging.getLogger(LOG_NAME)


@contextlib.contextmanager
def locked(repo: Repo) -> Iterator[None]:
    """Exclusive use of the repository for one render; a second render fails at once
    (unless the render holding it was killed: then it waits for the lock, see _lock).

    While held, `.git/runway-render.pid` marks a Runway render in progress. A render that is
    killed leaves it behind, which is how the next one knows that git lock files it finds
    were left by Runway's own git and may be cleared (see recover_git_locks)."""
    with (repo.git_dir / "runway.lock").open("a") as handle:
        if not _lock(repo, handle):
            raise GitError(f"{repo.work}: another render is running in this repository")
        try:
            recover_git_locks(repo)
            _mark(repo)
            yield
            (repo.git_dir / MARKER).unlink(missing_ok=True)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock(repo: Repo, handle: TextIO) -> bool:
    """Take the lock at once; or, while it is held only because the render holding it was
    killed (its marker names a process that is gone: the pool's workers it forked hold the
    lock until they have died with it), within KILLED_RENDER_WAIT seconds."""
    deadline = time.monotonic() + KILLED_RENDER_WAIT
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not holder_killed(repo) or time.monotonic() > deadline:
                return False
        time.sleep(0.01)


def holder_killed(repo: Repo) -> bool:
    """Whether the marker names a render whose process no longer runs. Anything else in
    its place (a link, a FIFO, a large file, text that is no process id) names no killed
    render: the lock is refused at once, as before."""
    text = _small_file(repo.git_dir / MARKER, 32)
    # ASCII digits between ASCII white space, as _mark writes them: str.strip() would also
    # take \x1c-\x1f away, which int() refuses (a marker of "\x1c0" raised ValueError).
    digits = None if text is None else text.strip(ASCII_SPACE)
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    pid = int(digits)
    if not 0 < pid <= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        return False
    return False


def _mark(repo: Repo) -> None:
    """Write the marker as a new file of its own: whatever stood at its name (a link left
    there points elsewhere) is removed first, never written through."""
    marker = repo.git_dir / MARKER
    marker.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(marker, flags, 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{os.getpid()}\n")


def git_locks(repo: Repo) -> list[Path]:
    """Git's own lock files that a killed git leaves behind (index, HEAD, refs)."""
    names = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")
    found = [repo.git_dir / n for n in names if (repo.git_dir / n).exists()]
    refs = repo.git_dir / "refs"
    return found + (sorted(refs.rglob("*.lock")) if refs.is_dir() else [])


def recover_git_locks(repo: Repo) -> None:
    """Remove the git lock files a killed Runway render left, under Runway's own lock, and
    only when no git process is working in this repository. A lock file that Runway did
    not leave (no marker) is somebody else's: refuse, naming it."""
    locks = git_locks(repo)
    if not locks:
        return
    busy = git_processes_in(repo.work)
    if busy:
        raise GitError(
            f"{locks[0]} is held: git is running in this repository (pid {', '.join(map(str, busy))}); try again when it has finished"
        )
    if not (repo.git_dir / MARKER).exists():
        raise GitError(
            f"{locks[0]} exists but no Runway render left it: a git command outside Runway was interrupted here; check the repository, then remove the file"
        )
    for lock in locks:
        log.warning("removing %s left by a killed render", lock)
        lock.unlink(missing_ok=True)


def recover(repo: Repo, subdir: str) -> None:
    """Undo a swap that a killed render (of an earlier Runway) left half done, and drop
    temporary files of an interrupted write."""
    target = repo.work / subdir
    retired = sorted(repo.git_dir.glob("runway-old-*"), key=lambda p: p.stat().st_mtime)
    if not target.exists() and retired:
        os.rename(retired[-1], target)
        retired = retired[:-1]
    new, marks = repo.git_dir.glob("runway-new-*"), repo.git_dir.glob("runway-marks-*")
    for leftover in [*retired, *new, *marks, repo.git_dir / SCRATCH]:
        shutil.rmtree(leftover, ignore_errors=True)
    for private in (RETRY_INDEX, f"{RETRY_INDEX}.lock"):  # of a killed retry
        (repo.git_dir / private).unlink(missing_ok=True)


def leftovers(repo: Repo) -> bool:
    """Whether a killed render left a swap or temporary files for `recover` to undo."""
    found = [*repo.git_dir.glob("runway-old-*"), *repo.git_dir.glob("runway-new-*")]
    return bool(found) or (repo.git_dir / SCRATCH).exists()


def git_processes_in(work: Path) -> list[int]:
    """Pids of git processes working in `work` (by working directory, or holding a file under
    its .git open). A process we cannot inspect counts as working here: removing a live lock
    is the one mistake to avoid."""
    found = []
    git_dir = str(work / ".git")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if not (entry / "comm").read_text().startswith("git"):
                continue
        except OSError:
            continue  # gone, or not ours to read
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            open_files = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except FileNotFoundError:
            continue  # it exited meanwhile
        except OSError:
            found.append(int(entry.name))
            continue
        if cwd == work or work in cwd.parents or any(f.startswith(git_dir) for f in open_files):
            found.append(int(entry.name))
    return sorted(found)


def _small_file(path: Path, limit: int) -> str | None:
    """The text of a regular file of at most `limit` bytes, not through a link, never waiting
    (a FIFO in its place opens without a writer); None for anything else."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return os.read(fd, limit + 1).decode("ascii", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
