"""The git subprocess: a repository's work tree and the one way Runway runs git in it.

Every git command Runway runs goes through Repo.start: no terminal prompt, the C locale, the
commits' author when one is given, Runway's fallback identity where the repository's git
configuration names nobody, and malloc slack that spares git most of its system time. A git that
fails, cannot start or outlives GIT_TIMEOUT is a GitError: Git did not answer as it must, and
trying again may work.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, Self

from core.fields.errors import Unavailable

GIT_TIMEOUT = 600  # a first commit of 10,000 ModelDeployments stages ~30,000 files
# glibc's malloc gives memory back to the system at every free above 128 KiB and asks again at the
# next allocation: git fast-import of 36,000 files made 146,000 brk calls and 700,000 page faults
# (2.7 s of system time, half its run). Keeping 32 MiB of slack removes them.
MALLOC = {"MALLOC_TOP_PAD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}
# Who commits when the repository's git configuration (local, global or system) names nobody.
FALLBACK_IDENTITY = ("runway", "runway@localhost")
# The logger of the git wing: its warnings read "WARNING renderer.gitops ..." on stderr, as they
# did when one module held all of it.
LOG_NAME = "renderer.gitops"


@dataclass(frozen=True, slots=True)
class Identity:
    """A commit author: `name <email>`."""

    name: str
    email: str


class GitError(Unavailable):
    """Git failed or the repository cannot be used (another render holds it, a push kept failing)."""


class Start(Protocol):
    """Repo.start: `git args` started now; calling the answer waits for git's."""

    def __call__(
        self,
        *args: str,
        check: bool = True,
        stdin: str | bytes | None = None,
        index: Path | None = None,
    ) -> Callable[[], subprocess.CompletedProcess[str]]: ...


class Fed:
    """A git started by Repo.feed: write() sends bytes to its standard input (buffered), close()
    ends the input and waits, a GitError when git failed (or took longer than GIT_TIMEOUT once
    its input ended); abort() ends it unfinished."""

    def __init__(self, name: str, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        self._name, self._process, self._errors = name, process, errors
        assert process.stdin is not None  # started with a pipe
        self._stdin = process.stdin

    def write(self, data: bytes) -> None:
        try:
            self._stdin.write(data)
        except BrokenPipeError:  # git stopped reading: close() says why
            self.close()
            raise GitError(f"git {self._name} stopped reading its input") from None

    def close(self) -> None:
        try:
            with contextlib.suppress(BrokenPipeError):
                self._stdin.close()
            try:
                code = self._process.wait(timeout=GIT_TIMEOUT)
            except subprocess.TimeoutExpired as expired:
                self._process.kill()
                self._process.wait()
                raise GitError(f"git {self._name}: {expired}") from None
            if code != 0:
                self._errors.seek(0)
                text = self._errors.read().decode("utf-8", errors="replace")
                raise GitError(f"git {self._name} failed: {text.strip().splitlines()[-1:]}")
        finally:
            self._errors.close()

    def abort(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stdin.close()
        self._process.wait()
        self._errors.close()


@dataclass(frozen=True)
class Repo:
    """A work tree. Commits are made as the repository's git configuration says (user.name,
    user.email), Runway's FALLBACK_IDENTITY filling in what it leaves unset; `author`, when
    given, is the commits' author (the committer stays as configured)."""

    work: Path
    author: Identity | None = None
    identity: tuple[str, ...] = (
        "-c",
        f"user.name={FALLBACK_IDENTITY[0]}",
        "-c",
        f"user.email={FALLBACK_IDENTITY[1]}",
    )

    @property
    def git_dir(self) -> Path:
        return self.work / ".git"

    @classmethod
    def open_or_init(cls, path: str | Path, *, author: Identity | None = None) -> Self:
        work = Path(path).resolve()
        work.mkdir(parents=True, exist_ok=True)
        repo = cls(work, author, ())
        if not repo.git_dir.is_dir():
            repo.git("init", "-q", "-b", "main")
        # one git for both keys (names as git writes them: lower case); each is set when git
        # has a value for it, even an empty one, as `git config --get` tells. NUL-ended
        # entries, a key then its value: a value holding a newline names no key.
        found = repo.git("config", "--null", "--get-regexp", r"^user\.(name|email)$", check=False)
        have = {entry.split("\n", 1)[0] for entry in found.stdout.split("\0")}
        unset = []
        for key, fallback in zip(("user.name", "user.email"), FALLBACK_IDENTITY, strict=True):
            if key not in have:
                unset += ["-c", f"{key}={fallback}"]
        return cls(work, author, tuple(unset))

    def git(
        self,
        *args: str,
        check: bool = True,
        stdin: str | bytes | None = None,
        index: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return self.start(*args, check=check, stdin=stdin, index=index)()

    def start(
        self,
        *args: str,
        check: bool = True,
        stdin: str | bytes | None = None,
        index: Path | None = None,
    ) -> Callable[[], subprocess.CompletedProcess[str]]:
        """`git args`, started now; calling the answer waits for it and gives what `git` gives
        (so that Runway can work while git does). `index`: a private index file for git to use
        instead of the repository's (GIT_INDEX_FILE)."""
        finish = self._start(args, stdin, index)

        def decoded() -> subprocess.CompletedProcess[str]:
            code, out, err = finish()
            done = subprocess.CompletedProcess(
                ["git", *args],
                code,
                out.decode("utf-8", errors="replace"),
                err.decode("utf-8", errors="replace"),
            )
            if check and done.returncode != 0:
                raise GitError(
                    f"git {args[0]} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
                )
            return done

        return decoded

    def output(
        self, *args: str, stdin: str | bytes | None = None, index: Path | None = None
    ) -> bytes:
        """What `git args` writes, as bytes (an object's content); GitError when it fails."""
        code, out, err = self._start(args, stdin, index)()
        if code != 0:
            lines = err.decode("utf-8", errors="replace").strip().splitlines()[-1:]
            raise GitError(f"git {args[0]} failed: {lines}")
        return out

    def _start(
        self, args: Sequence[str], stdin: str | bytes | None, index: Path | None = None
    ) -> Callable[[], tuple[int, bytes, bytes]]:
        env = self._env(index)
        try:
            process = subprocess.Popen(
                ["git", *self.identity, *args],
                cwd=self.work,
                env=env,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as err:
            raise GitError(f"git {args[0]}: {err}") from None
        data = stdin.encode() if isinstance(stdin, str) else stdin

        def finish() -> tuple[int, bytes, bytes]:
            try:
                out, err = process.communicate(data, timeout=GIT_TIMEOUT)
            except subprocess.TimeoutExpired as expired:
                process.kill()
                process.communicate()
                raise GitError(f"git {args[0]}: {expired}") from None
            return process.returncode, out, err

        return finish

    def _env(self, index: Path | None) -> dict[str, str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **MALLOC}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if self.author is not None:
            env |= {"GIT_AUTHOR_NAME": self.author.name, "GIT_AUTHOR_EMAIL": self.author.email}
        return env

    def feed(self, *args: str) -> Fed:
        """`git args` started now, its standard input a pipe that the caller writes as it goes
        (Fed), so that what git reads is never held whole; its output is discarded, its errors
        kept in a file for the message of a failure."""
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - Fed closes it
        try:
            process = subprocess.Popen(
                ["git", *self.identity, *args],
                cwd=self.work,
                env=self._env(None),
                bufsize=1 << 20,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
        except OSError as err:
            errors.close()
            raise GitError(f"git {args[0]}: {err}") from None
        return Fed(args[0], process, errors)

    def head(self) -> str | None:
        """HEAD's commit; None before the first commit."""
        found = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
        return found.stdout.strip() if found.returncode == 0 else None
