"""Writing files of the rendered tree: each one whole before its name points at it, nothing
written outside the tree, and each file's Stat kept as it is written.

A killed render leaves every file either old or new: each file is written to a scratch file in
.git and renamed to its name (a rename never follows the name). Measured on this machine's ext4
with a first render of 10,000 ModelDeployments (36,689 files in 10,021 new folders): making each
file in its own folder instead, whether unnamed (O_TMPFILE, then linked), under a temporary
name or under its own, cost 10.6-11.9 s of system time against 3.2-4.6 s through the scratch
folder, where every new inode is allocated near one folder.

Every folder is opened relative to its parent without following links (renderer.git.safefs), and
every path is checked to be plain before anything is written to it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from renderer.git.safefs import Folders, plain_parts

if TYPE_CHECKING:
    from renderer.git.bulk import BlobSink

# A file's inode, size, mtime and ctime (ns): rewriting or editing a file changes at least one of
# them (ctime cannot be set back by hand), as git's index relies on.
Stat = tuple[int, int, int, int]


class TreeWriter:
    """Writes and removes files under `work/subdir` (paths relative to `subdir`), as a context:
    folders stay open for the writes that follow, and the scratch folder is removed at the
    end. `written` lists every path written or removed, in order (`removed` those removed);
    `stats` the Stat of each file written, taken after it got its name. With a `sink`, each
    file's bytes go to it too, marked by the file's place in `written` (from 1)."""

    def __init__(
        self, work: Path, subdir: str, scratch: Path, sink: BlobSink | None = None
    ) -> None:
        self._folders = Folders(work)
        self._subdir = subdir
        self._scratch = scratch
        self._sink = sink
        self.written: list[str] = []
        self.removed: list[str] = []
        self.stats = Stats()

    def __enter__(self) -> TreeWriter:
        self._scratch.mkdir(exist_ok=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._folders.__exit__(kind, err, tb)
        shutil.rmtree(self._scratch, ignore_errors=True)

    def check(self, relatives: Iterable[str]) -> None:
        """Every path plain (renderer.git.safefs), before any of them is written or removed."""
        for relative in relatives:
            plain_parts(f"{self._subdir}/{relative}")

    def write(self, relative: str, text: str) -> None:
        """`relative` holds `text` afterwards."""
        folder, _, name = f"{self._subdir}/{relative}".rpartition("/")
        plain_parts(f"{folder}/{name}")
        into = self._folders.fd(folder, create=True)
        assert into is not None  # created when missing
        temporary = f"{self._scratch}/{len(self.written)}"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        data = text.encode("utf-8")
        try:
            _write_all(handle, data)
        finally:
            os.close(handle)
        os.replace(temporary, name, dst_dir_fd=into)  # a rename never follows `name`
        self.stats.put(relative, stat_tuple(os.stat(name, dir_fd=into, follow_symlinks=False)))
        self.written.append(relative)
        if self._sink is not None:
            self._sink.add(len(self.written), data)

    def remove(self, relative: str) -> None:
        """Remove one file, then the folders it leaves empty, up to (not including) `subdir`;
        every folder opened without following links."""
        folders, subdir = self._folders, self._subdir
        folder, _, name = f"{subdir}/{relative}".rpartition("/")
        plain_parts(f"{folder}/{name}")
        self.written.append(relative)
        self.removed.append(relative)
        found = folders.fd(folder, create=False)
        if found is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=found)
        while folder != subdir:
            parent, _, child = folder.rpartition("/")
            above = folders.fd(parent, create=False)
            if above is None:
                return
            try:
                os.rmdir(child, dir_fd=above)
            except OSError:
                return  # not empty: files of another object, or of a person
            folders.forget(folder)
            folder = parent


class Stats(Mapping[str, Stat]):
    """path -> Stat of the files written, each kept packed (32 bytes, not a tuple of four
    numbers): a first render of 100,000 ModelDeployments writes 330,000 files, whose Stats as
    tuples took 80 MB."""

    _PACK = struct.Struct("<4q")

    def __init__(self) -> None:
        self._packed: dict[str, bytes] = {}
        self._odd: dict[str, Stat] = {}  # what does not pack (a number past 64 bits)

    def put(self, path: str, stat: Stat) -> None:
        try:
            self._packed[path] = self._PACK.pack(*stat)
        except struct.error:
            self._packed.pop(path, None)
            self._odd[path] = stat
        else:
            self._odd.pop(path, None)

    def __getitem__(self, path: str) -> Stat:
        found = self._packed.get(path)
        if found is None:
            return self._odd[path]
        ino, size, mtime, ctime = self._PACK.unpack(found)
        return ino, size, mtime, ctime

    def __iter__(self) -> Iterator[str]:
        yield from self._packed
        yield from self._odd

    def __len__(self) -> int:
        return len(self._packed) + len(self._odd)

    def __contains__(self, path: object) -> bool:
        return path in self._packed or path in self._odd


def stat_of(path: str | Path) -> Stat:
    return stat_tuple(os.lstat(path))


def stat_tuple(found: os.stat_result) -> Stat:
    return found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]
