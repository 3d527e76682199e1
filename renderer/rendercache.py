"""The render cache: per output folder, what it was last rendered from and what that reported.

The cache (in .git, never committed) remembers, per folder, the key its output was rendered under
(renderer.digests.render_key), a digest of the files it wrote, the report, and the files' Stats
(inode, size, mtime, ctime) after writing. Anything unreadable in it is treated as absent: the
worst case is a full render. A render loads it once and writes it once, at the end.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from kubeio.files import atomic_write
from renderer.writer import Stat, stat_of

CACHE_FORMAT = 5
# A folder's files: their names in name order, and each one's Stat packed as four 64-bit integers
# (unpickling the Stats of 10,000 folders as tuples of integers took 27 ms, packed 8 ms).
Stats = tuple[tuple[str, ...], bytes]
_STAT = struct.Struct("<QQqq")  # inode, size, mtime and ctime (ns)
T = TypeVar("T")
log = logging.getLogger(__name__)


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
    """Entries by folder (namespace/name), read from and written to one file in .git (pickled
    tuples of plain values: loading 10,000 entries takes milliseconds). `tree`: the git tree
    the output folder held, committed, when the entries were saved (None when it was not
    committed): while git finds the folder clean and HEAD still holds that tree, every entry
    holds for the files there, whatever their Stats (renderer.cleantree)."""

    def __init__(
        self,
        entries: dict[str, Entry] | None = None,
        loaded: tuple[dict[str, Entry], str | None] | None = None,
        tree: str | None = None,
        rows: Mapping[str, tuple[Any, ...]] | None = None,
    ) -> None:
        self.entries = entries or {}
        self.tree = tree
        # the entries and tree in the file now: saving the same again is skipped
        self.loaded = loaded
        self._rows = rows or {}  # the file's rows of `loaded`'s entries, written again as read

    def succeeded_by(self, entries: dict[str, Entry]) -> RenderCache:
        """The cache after a render that left `entries` (an entry loaded from the file, kept
        as it is, is saved as it was read)."""
        return RenderCache(entries, self.loaded, rows=self._rows)

    @classmethod
    def load(cls, path: Path) -> RenderCache:
        try:
            with path.open("rb") as handle:
                raw = pickle.load(handle)
            if raw[0] != CACHE_FORMAT:
                return cls()
            rows = raw[1]
            entries = {folder: Entry(*fields) for folder, fields in rows.items()}
            tree = raw[2] if isinstance(raw[2], str) else None
        except Exception:  # unreadable or of another shape: as if absent (a full render)
            log.debug("ignoring unreadable %s", path, exc_info=True)
            return cls()
        return cls(entries, (dict(entries), tree), tree, rows)

    def record_stats(
        self,
        root: Path,
        known: Mapping[str, Stat] | None = None,
        tree: Iterable[str] | None = None,
    ) -> None:
        """The Stats of each folder rendered this time, after writing (see the module's text).
        `tree`: the paths under `root` the write left (in path order); `known`: the Stat of
        some of them (as written, or as scanned before and not written since). A folder whose
        files are all known needs no look at the disk; any other is read."""
        missing = {folder for folder, entry in self.entries.items() if entry.stats is None}
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
            self.entries[folder] = replace(self.entries[folder], stats=stats)

    def save(self, path: Path) -> None:
        """Written atomically (kubeio.files): a killed render leaves the old cache or the new.
        Nothing is written when the file holds these entries and tree already."""
        if self.loaded == (self.entries, self.tree):
            return
        one = Shared()
        kept = self.loaded[0] if self.loaded is not None else {}
        entries = {
            folder: self._rows[folder]
            if kept.get(folder) is e and folder in self._rows
            else (
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
            for folder, e in sorted(self.entries.items())
        }
        data = pickle.dumps((CACHE_FORMAT, entries, self.tree), protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(path, data)
        self.loaded = (dict(self.entries), self.tree)


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
