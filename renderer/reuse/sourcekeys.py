"""Source files' keys by their Stats: a file whose Stat is the one recorded when its bytes were
last read is not read again.

A render keys every source file by its path and bytes (renderer.reuse.parsecache.file_key):
10,000 files laid out one per ModelDeployment were 10,000 reads and digests on every render,
twice on a render that renders (the stamp's inputs, then the plan), most of a re-render that
changes nothing. The record, a file in .git beside the parsed sources' folder, holds for each path the
Stat of the file (device, inode, size, mtime and ctime in nanoseconds) taken just before its
bytes were read, with their key. A file whose Stat is that one is keyed as recorded; any other
file is read, and its new Stat recorded.

As git's index does with its stat cache, a Stat only vouches for bytes that cannot have changed
within the clock's tick that stamped it: an entry is recorded only when the file's ctime is more
than RACY_NS before the Stat was taken. Every change of a file's bytes (or of its mtime, put
back or not) sets its ctime to the time of the change, so a later change always gives another
ctime, and a file changed in the second its Stat was taken is read again next time. What this
cannot see is what no stat can: a file system whose clock went back, or one that does not keep
ctime. `runway render --full` reads every file.

A record that is missing, unreadable, of another version or of the wrong shape is no record:
every file is read (the worst case is the work of a render without it). As git's index, it
carries a checksum of its entries: a record damaged where it still unpickles (a key's byte
changed) is no record either.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from core.fields.errors import SourceError
from kubeio.sources import yaml_files
from renderer.reuse.digests import digest
from renderer.reuse.store import NextPickle, Store, types_of

RECORD_FORMAT = 1
RECORD_SUFFIX = (
    "-keys.pickle"  # the record beside the parsed sources' folder: runway-sources-keys.pickle
)
# A Stat vouches for a file's bytes only when its ctime is this long before the Stat was taken
# (git as Debian builds it compares whole seconds: one second covers any file system's tick).
RACY_NS = 1_000_000_000

# The Stat of a file as recorded: device, inode, size, mtime_ns, ctime_ns.
Signature = tuple[int, int, int, int, int]


class SourceFile(NamedTuple):
    """A source file as read: its path, its bytes (None: its Stat vouched for its key, and
    they are read when needed: `content`) and its file_key."""

    path: Path
    data: bytes | None
    key: str

    def content(self) -> bytes:
        """Its bytes, read now if they were not (SourceError when they cannot be)."""
        if self.data is not None:
            return self.data
        try:
            return self.path.read_bytes()
        except OSError as err:
            raise SourceError(str(self.path), f"cannot read: {err.strerror or err}") from None


def record_of(folder: Path | None) -> Path | None:
    """The record of the parsed sources' `folder`: a file beside it."""
    return folder.with_name(folder.name + RECORD_SUFFIX) if folder is not None else None


def file_key(path: Path, data: bytes) -> str:
    """One source file as read: its path and its bytes."""
    return digest(str(path), data)


def signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class SourceKeys:
    """The keys of source files, from `record` (a file; None: no record, every file read) when
    their Stats vouch for them (and `trust`), else from their bytes. `save` writes what was
    learned. `racy_ns`: how long before its Stat was taken a file's ctime must be for the Stat
    to be recorded (RACY_NS)."""

    def __init__(self, record: Path | None, *, trust: bool = True, racy_ns: int = RACY_NS) -> None:
        self.record, self._trust, self._racy = record, trust, racy_ns
        self._known: dict[str, tuple[Signature, str]] | None = None
        self._learned: dict[str, tuple[Signature, str]] = {}
        self._listing: str | None = None
        self._walked: dict[tuple[tuple[str, ...], bool], list[SourceFile]] = {}

    def files(self, paths: Sequence[str], *, recursive: bool = True) -> list[SourceFile]:
        """The files reading `paths` reads (folders walked as kubeio.sources walks them, with
        every folder under them when `recursive`), each keyed, in order; walked and keyed once
        for this object (a render asks for them when it looks at its stamp, then when it plans).
        SourceError when one cannot be read."""
        asked = (tuple(paths), recursive)
        if asked not in self._walked:
            found = []
            for path in yaml_files(paths, recursive=recursive):
                try:
                    key, data = self.key(path)
                except OSError as err:
                    why = f"cannot read: {err.strerror or err}"
                    raise SourceError(str(path), why) from None
                found.append(SourceFile(path, data, key))
            self._walked[asked] = found
        return self._walked[asked]

    def key(self, path: Path) -> tuple[str, bytes | None]:
        """`path`'s file_key, and its bytes when they were read to key it (None: its Stat
        vouched for the recorded key). OSError when the file cannot be stat'ed or read."""
        name = str(path)
        known = self._entries().get(name) if self._trust else None
        if known is not None:
            try:
                now = signature(os.stat(path))
            except OSError:
                now = None
            if now == known[0]:
                return known[1], None
        data, key = self.read(path)
        return key, data

    def read(self, path: Path) -> tuple[bytes, str]:
        """`path`'s bytes and key, read now, its Stat (taken before the read) recorded unless
        racy."""
        taken = time.time_ns()
        with path.open("rb") as handle:
            st = os.fstat(handle.fileno())
            data = handle.read()
        name, key = str(path), file_key(path, data)
        if st.st_ctime_ns < taken - self._racy:
            self._learned[name] = (signature(st), key)
        return data, key

    @classmethod
    def within(
        cls, folder: Path | None, *, trust: bool = True, racy_ns: int = RACY_NS
    ) -> SourceKeys:
        """The keys recorded in the parsed sources' `folder` (renderer.reuse.parsecache);
        without `trust`, every file is read (and what is learned recorded)."""
        return cls(record_of(folder), trust=trust, racy_ns=racy_ns)

    def listing(self) -> str | None:
        """The `listing` the record was saved with (renderer.reuse.parsecache: the digest of
        the paths the last render read)."""
        self._entries()
        return self._listing

    def save(
        self, folder: Path | None = None, keep: set[str] | None = None, listing: str | None = None
    ) -> None:
        """The record (in the parsed sources' `folder`, when given: the repository may not
        have existed when the files were read) with what was learned, entries of paths not in
        `keep` (when given) dropped, and `listing` (when given); written only when that
        changes it. Best effort: a record
        that cannot be written means files read again next time."""
        record = record_of(folder) if folder is not None else self.record
        if record is None:
            return
        known = self._entries()
        entries = {**known, **self._learned}
        if keep is not None:
            entries = {name: entry for name, entry in entries.items() if name in keep}
        listing = listing or self._listing
        if entries != known or record != self.record or listing != self._listing:
            body = pickle.dumps((entries, listing), protocol=pickle.HIGHEST_PROTOCOL)
            Store.save(record, (RECORD_FORMAT, digest(body), body), best_effort=True)
        self.record, self._known, self._learned, self._listing = record, entries, {}, listing

    def _entries(self) -> dict[str, tuple[Signature, str]]:
        if self._known is None:
            found = Store.load(self.record, _shape) if self.record is not None else None
            self._known, self._listing = found if found is not None else ({}, None)
        return self._known


def _shape(read: NextPickle) -> tuple[dict[str, tuple[Signature, str]], str | None]:
    """The record's entries, each of the shape it must have (else TypeError: no record);
    checked a field at a time over every entry."""
    version, checksum, body = read()
    if version != RECORD_FORMAT or type(body) is not bytes or checksum != digest(body):
        raise TypeError("a record of another version, or damaged")
    raw, listing = pickle.loads(body)
    if type(raw) is not dict or (listing is not None and type(listing) is not str):
        raise TypeError("a record of another shape")
    entries = list(raw.values())
    if (
        types_of(raw) - {str}
        or types_of(entries) - {tuple}
        or any(len(entry) != 2 for entry in entries)
    ):
        raise TypeError("an entry of another shape")
    stats, keys = zip(*entries, strict=True) if entries else ((), ())
    if types_of(stats) - {tuple} or types_of(keys) - {str} or any(len(s) != 5 for s in stats):
        raise TypeError("an entry of another shape")
    if types_of(*stats) - {int}:
        raise TypeError("a Stat that is not numbers")
    return raw, listing
