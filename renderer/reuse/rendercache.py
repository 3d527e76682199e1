"""The render cache: per output folder, what it was last rendered from and what that reported.

The cache (in .git, never committed) remembers, per folder, the key its output was rendered under
(renderer.reuse.digests.render_key), a digest of the files it wrote, the report, and the files' Stats
(inode, size, mtime, ctime) after writing. Anything unreadable in it is treated as absent: the
worst case is a full render. A render loads it once and writes it once, at the end.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from renderer.git.writer import Stat, stat_of
from renderer.reuse.store import NextPickle, Store

CACHE_FORMAT = 6
ENTRY_FIELDS = 9  # the fields of an Entry, as a row keeps them
# A folder's files: their names in name order, and each one's Stat packed as four 64-bit integers
# (unpickling the Stats of 10,000 folders as tuples of integers took 27 ms, packed 8 ms).
Stats = tuple[tuple[str, ...], bytes]
_STAT = struct.Struct("<QQqq")  # inode, size, mtime and ctime (ns)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry:
    """What one folder was last rendered from, and what that render reported."""

    key: str
    files: str | None  # folder_digest of the files written; None when the object failed
    error: str | None
    warnings: tuple[str, ...]
    engine: str | None
    provider: str | None
    schemas: tuple[tuple[str, str], ...] = ()  # Result.schemas of that render
    hydrated: str | None = None  # text_digest of the folder's hydrated file, as `stats` saw it
    stats: Stats | None = None  # the folder's files after writing


class RenderCache:
    """Entries by folder (namespace/name), read from and written to one file in .git. `tree`:
    the git tree the output folder held, committed, when the entries were saved (None when it
    was not committed): while git finds the folder clean and HEAD still holds that tree, every
    entry holds for the files there, whatever their Stats (renderer.reuse.cleantree).

    The file holds each namespace's entries as a pickle of its own (pickled tuples of plain
    values), read only when an entry of that namespace is asked for, and written again as read
    while its entries are the ones read: a render of one namespace of 10,000 folders in 20
    reads and writes one twentieth of the entries (unpickling and pickling all of them was 50
    of the 500 ms of such a render)."""

    def __init__(self, entries: dict[str, Entry] | None = None, tree: str | None = None) -> None:
        self._entries = entries if entries is not None else {}
        self.tree = tree
        # the file's namespaces not read yet (name -> pickle): entries of this cache too
        self._unread: dict[str, bytes] = {}
        # the file's namespaces that were read: name -> (pickle, its entries as read)
        self._read: dict[str, tuple[bytes, dict[str, Entry]]] = {}
        self._file: tuple[frozenset[str], str | None] | None = None  # namespaces, tree in it

    @property
    def entries(self) -> dict[str, Entry]:
        """Every entry (each namespace still unread is read now)."""
        for namespace in list(self._unread):
            self._take(namespace)
        return self._entries

    def entry(self, folder: str) -> Entry | None:
        """The entry of `folder`, reading only its namespace."""
        namespace = folder.split("/", 1)[0]
        if namespace in self._unread:
            self._take(namespace)
        return self._entries.get(folder)

    def entries_in(self, owns: Callable[[str], bool]) -> dict[str, Entry]:
        """The entries of the namespaces `owns` owns (only those are read)."""
        for namespace in [n for n in self._unread if owns(n)]:
            self._take(namespace)
        return {f: e for f, e in self._entries.items() if owns(f.split("/", 1)[0])}

    def succeeded_by(self, entries: dict[str, Entry]) -> RenderCache:
        """The cache after a render that left `entries` (a namespace whose entries are all as
        read from the file is saved as it was read)."""
        after = RenderCache(entries)
        after._read, after._file = self._read, self._file
        return after

    def merged(self, owns: Callable[[str], bool], part: RenderCache) -> RenderCache:
        """This cache with the namespaces `owns` owns as `part` (a render of them) left them:
        the other namespaces are kept as they are, read or not."""
        entries = {f: e for f, e in self._entries.items() if not owns(f.split("/", 1)[0])}
        entries.update(part._entries)
        after = RenderCache(entries)
        after._unread = {n: b for n, b in self._unread.items() if not owns(n)}
        after._read, after._file = {**self._read, **part._read}, self._file
        return after

    def _take(self, namespace: str) -> None:
        blob = self._unread.pop(namespace)
        read = {folder: Entry(*fields) for folder, fields in _namespace_rows(blob).items()}
        self._read[namespace] = (blob, read)
        self._entries.update(read)

    @classmethod
    def load(cls, path: Path) -> RenderCache:
        """The cache in the file at `path`; empty when there is none, or it is unreadable or of
        another shape (the worst case is a full render). A namespace that turns out unreadable
        when it is read is empty (its folders render again)."""
        found = Store.load(path, cls._shape)
        return cls() if found is None else found

    @classmethod
    def _shape(cls, read: NextPickle) -> RenderCache:
        raw = read()
        if raw[0] != CACHE_FORMAT:
            return cls()
        tree = raw[1] if isinstance(raw[1], str) else None
        blobs = raw[2]
        if not all(isinstance(n, str) and isinstance(b, bytes) for n, b in blobs.items()):
            raise TypeError("a namespace that is not a name and a pickle")
        cache = cls(None, tree)
        cache._unread, cache._file = dict(blobs), (frozenset(blobs), tree)
        return cache

    def record_stats(
        self,
        root: Path,
        known: Mapping[str, Stat] | None = None,
        tree: Iterable[str] | None = None,
    ) -> None:
        """The Stats of each folder rendered this time, after writing (see the module's text).
        `tree`: the paths under `root` the write left (in path order); `known`: the Stat of
        some of them (as written, or as scanned before and not written since). A folder whose
        files are all known needs no look at the disk; any other is read. Namespaces kept
        unread are as the file holds them."""
        missing = {folder for folder, entry in self._entries.items() if entry.stats is None}
        if not missing:
            return
        names: dict[str, list[str]] = {}
        for path in tree if tree is not None and known is not None else ():
            folder, _, name = path.rpartition("/")
            if folder in missing:
                names.setdefault(folder, []).append(name)
        for folder in sorted(missing):
            held = names.get(folder)
            stats = (
                _folder_stats(root / folder)
                if held is None or known is None
                else _known_stats(root, folder, held, known)
            )
            self._entries[folder] = replace(self._entries[folder], stats=stats)

    def save(self, path: Path) -> None:
        """Written atomically (kubeio.files): a killed render leaves the old cache or the new.
        Nothing is written when the file holds these entries and tree already."""
        grouped: dict[str, dict[str, Entry]] = {}
        for folder, entry in self._entries.items():
            grouped.setdefault(folder.split("/", 1)[0], {})[folder] = entry
        blobs = dict(self._unread)
        for namespace, entries in grouped.items():
            blob, read = self._read.get(namespace, (b"", {}))
            same = len(read) == len(entries) and all(read.get(f) is e for f, e in entries.items())
            blobs[namespace] = blob if same else _namespace_blob(entries)
        reused = all(
            namespace in self._unread or self._read.get(namespace, (None,))[0] is blob
            for namespace, blob in blobs.items()
        )
        if reused and self._file == (frozenset(blobs), self.tree):
            return
        ordered = {namespace: blobs[namespace] for namespace in sorted(blobs)}
        Store.save(path, (CACHE_FORMAT, self.tree, ordered))
        self._read = {
            n: (b, grouped.get(n, {})) for n, b in ordered.items() if n not in self._unread
        }
        self._file = (frozenset(ordered), self.tree)


def _namespace_blob(entries: Mapping[str, Entry]) -> bytes:
    """One namespace's entries, pickled (equal values once: Shared)."""
    one = Shared()
    rows = {
        folder: (
            e.key,
            e.files,
            e.error,
            one(e.warnings),
            one(e.engine),
            one(e.provider),
            one(e.schemas),
            e.hydrated,
            None if e.stats is None else (tuple(map(one, e.stats[0])), e.stats[1]),
        )
        for folder, e in sorted(entries.items())
    }
    return pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def _namespace_rows(blob: bytes) -> dict[str, tuple[Any, ...]]:
    """The rows of one namespace's pickle; empty when it is unreadable or of another shape."""
    found = Store.loads(blob, _rows_shape, "namespace of the render cache")
    return {} if found is None else found


def _rows_shape(rows: Any) -> dict[str, tuple[Any, ...]]:
    if not isinstance(rows, dict) or not all(
        isinstance(f, str) and isinstance(r, tuple) and len(r) == ENTRY_FIELDS
        for f, r in rows.items()
    ):
        raise TypeError("rows of another shape")
    return rows


class Shared:
    """Equal values as one object, so that pickle writes each once and loading makes it once:
    10,000 entries hold a few distinct schema lists, engines and file names (the render cache of
    10,000: 4.6 MB and 74 ms to load as written, 3.2 MB and 31 ms so)."""

    def __init__(self) -> None:
        self._seen: dict[Any, Any] = {}

    def __call__(self, value: T) -> T:
        return self._seen.setdefault(value, value)  # type: ignore[no-any-return]


def packed(files: Sequence[tuple[str, Stat]]) -> Stats | None:
    """A folder's files (name, Stat), in name order, as an entry keeps them; None when a Stat
    does not fit (then the folder is read next time)."""
    try:
        return tuple(name for name, _ in files), b"".join(_STAT.pack(*s) for _, s in files)
    except struct.error:
        return None


def unpacked(stats: Stats) -> list[tuple[str, Stat]]:
    """The files `packed` packed."""
    names, data = stats
    return list(zip(names, _STAT.iter_unpack(data), strict=True))


def _known_stats(
    root: Path, folder: str, names: Sequence[str], known: Mapping[str, Stat]
) -> Stats | None:
    """The folder's files (`names`, in name order) with their Stats, looked up where known."""
    try:
        return packed(
            [
                (name, known.get(f"{folder}/{name}") or stat_of(root / folder / name))
                for name in names
            ]
        )
    except OSError:
        return None  # gone meanwhile: read next time


def _folder_stats(folder: Path) -> Stats | None:
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
        return packed([(name, stat_of(folder / name)) for name in names])
    except OSError:
        return None  # no folder (a failed object that never rendered): read next time
