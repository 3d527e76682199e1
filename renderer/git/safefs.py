"""Paths inside the GitOps tree, opened one component at a time without following any link.

Whoever can push to the GitOps remote decides what the work tree holds after a fetch: a
committed symbolic link at `rendered` or `rendered/<namespace>` would otherwise send the
render's writes and removals wherever it points. Every folder is opened relative to its parent
with O_NOFOLLOW | O_DIRECTORY, so a link (or a file where a folder belongs) anywhere under the
work tree stops the render with an error naming it, before anything is written through it.
Every relative path is checked to be plain (no empty, `.` or `..` component, no NUL, each
component a valid file name) before it is used.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from types import TracebackType

from core.fields.errors import RunwayError

NAME_MAX = 255  # bytes in one path component (Linux)
# Folders kept open at once: a first render of 100,000 ModelDeployments writes 100,500 folders,
# and kept every one open until it failed on the limit of open files (20,000 here, 1,024 on
# many machines). Folders are written in path order, so the recently used are the ones needed.
OPEN_FOLDERS = 256
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK_OR_FILE = (errno.ELOOP, errno.ENOTDIR)


class UnsafePath(RunwayError):
    """A path that would leave the tree, or a link or odd file inside it."""


def plain_parts(relative: str) -> list[str]:
    """The components of a relative path that stays where it is written; UnsafePath if not."""
    parts = relative.split("/")
    for part in parts:
        if part in ("", ".", "..") or "\0" in part or len(part.encode("utf-8")) > NAME_MAX:
            raise UnsafePath(
                f"{relative!r}: not a plain relative path (an empty, '.' or '..' component, "
                f"a NUL, or a component over {NAME_MAX} bytes); nothing was written"
            )
    return parts


def link_error(path: Path | str) -> UnsafePath:
    return UnsafePath(
        f"{path}: is a symbolic link or not a regular file or folder; Runway never follows or "
        "writes through links in the GitOps tree: remove it (git rm) and render again"
    )


class Folders:
    """Folders under `base` (opened as given: the user named it), each opened relative to its
    parent without following links, and kept open for the writes that follow: the OPEN_FOLDERS
    used last; one closed before is opened again the same way, from `base`, when asked for."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._open: dict[str, int] = {}  # in the order last used

    def __enter__(self) -> Folders:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()

    def fd(self, folder: str, *, create: bool) -> int | None:
        """The descriptor of `folder` (relative to base, "" for base); None when it does not
        exist and `create` is false."""
        known = self._open.pop(folder, None)
        if known is not None:
            self._open[folder] = known  # the last used now
            return known
        found: int | None
        if folder == "":
            found = os.open(self.base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            parent, _, name = folder.rpartition("/")
            plain_parts(name)
            above = self.fd(parent, create=create)
            if above is None:
                return None
            try:
                found = self._open_child(above, name, create=create)
            except OSError as err:
                if err.errno in _LINK_OR_FILE:
                    raise link_error(self.base / folder) from None
                raise
            if found is None:
                return None
        self._open[folder] = found
        if len(self._open) > OPEN_FOLDERS:  # never `folder`, nor the parent it was opened from
            oldest = next(iter(self._open))
            os.close(self._open.pop(oldest))
        return found

    @staticmethod
    def _open_child(above: int, name: str, *, create: bool) -> int | None:
        try:
            return os.open(name, _DIR, dir_fd=above)
        except FileNotFoundError:
            if not create:
                return None
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened below, not followed
            os.mkdir(name, 0o777, dir_fd=above)
        return os.open(name, _DIR, dir_fd=above)

    def forget(self, folder: str) -> None:
        """Close `folder` (after it was removed)."""
        fd = self._open.pop(folder, None)
        if fd is not None:
            os.close(fd)


def read_text(path: Path | str) -> str:
    """A file's text, refusing a link in its last component (the folders above were scanned)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in _LINK_OR_FILE:
            raise link_error(path) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")
