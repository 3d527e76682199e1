"""Where the caches of a render live, and how they are read and written: one Store per
repository owns every `.git/runway-*` name the caches use (the parsed sources, the parsed
schemas, the render cache, the stamp, Runway's fingerprint), and the one safe way to read a
pickle back (anything unreadable, of another version or of the wrong shape is absent: the
worst case is a render that does the work again) and to save one (atomically: a killed render
leaves the old file or the new). The git wing's own names (its locks, indexes and marks) stay
in renderer/git/.
"""

from __future__ import annotations

import itertools
import logging
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubeio.files import atomic_write
from renderer.output.shard import Shard
from renderer.reuse.digests import digest
from renderer.settings import RenderSettings

T = TypeVar("T")
log = logging.getLogger(__name__)

# Reads the next pickle of an open file (Store.load hands it to a shape, which may read one,
# check it and stop, or read more).
NextPickle = Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Store:
    """The caches' files in one repository's .git folder (`git_dir`)."""

    git_dir: Path

    @property
    def sources(self) -> Path:
        """A folder: parsed source files, by content (renderer.reuse.parsecache)."""
        return self.git_dir / "runway-sources"

    @property
    def fingerprint(self) -> Path:
        """Runway's fingerprint, kept under its files' Stats (renderer.reuse.digests)."""
        return self.git_dir / "runway-fingerprint"

    def schemas(self, key: str) -> Path:
        """The parsed upstream schemas of `key` (the digest of what they were parsed from)."""
        return self.git_dir / f"runway-schemas-{key}.pickle"

    def drop_schemas_but(self, key: str) -> None:
        """The parsed schemas of any other key are stale: removed."""
        keep = self.schemas(key).name
        for stale in self.git_dir.glob("runway-schemas-*.pickle"):
            if stale.name != keep:
                stale.unlink(missing_ok=True)

    def render_cache(self, key: str) -> Path:
        """The render cache of one output folder, and shard of it (settings.cache_key)."""
        return self.git_dir / f"runway-render-cache-{key}.pickle"

    def stamp(self, key: str) -> Path:
        """The stamp of one output folder, and shard of it, as the render cache."""
        return self.git_dir / f"runway-stamp-{key}.pickle"

    @staticmethod
    def load(path: Path, shape: Callable[[NextPickle], T]) -> T | None:
        """`shape` of the pickles in the file at `path` (it reads them through the function it
        is given, and raises on anything of another shape); None when there is no file, or it
        is unreadable, of another version or of the wrong shape."""
        try:
            with path.open("rb") as handle:
                return shape(lambda: pickle.load(handle))
        except FileNotFoundError:
            return None
        except Exception:  # unreadable or of another shape: as if absent
            log.debug("ignoring unreadable %s", path, exc_info=True)
            return None

    @staticmethod
    def loads(blob: bytes, shape: Callable[[Any], T], what: str) -> T | None:
        """`shape` of the pickle `blob` (part of a file, `what`); None when it is unreadable or
        of the wrong shape, as Store.load."""
        try:
            return shape(pickle.loads(blob))
        except Exception:  # unreadable or of another shape: as if absent
            log.debug("ignoring an unreadable %s", what, exc_info=True)
            return None

    @staticmethod
    def save(path: Path, *values: Any, best_effort: bool = False) -> None:
        """`values` pickled one after the other into the file at `path`, atomically. With
        `best_effort`, a value that cannot be pickled or a file that cannot be written is not
        saved (the next render does the work again); else that fails the render."""
        try:
            data = b"".join(pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for v in values)
            atomic_write(path, data)
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            if not best_effort:
                raise
            log.debug("not caching %s", path, exc_info=True)

    def cached(self, path: Path, build: Callable[[], T]) -> T:
        """`build()`, pickled at `path` the first time and loaded from there after (the caller
        puts the digest of everything `build` reads into the name)."""
        found: T | None = self.load(path, lambda read: read())
        if found is not None:
            return found
        value = build()
        self.save(path, value, best_effort=True)
        return value


def types_of(*columns: Iterable[Any]) -> set[type]:
    """The types of the values in `columns` (a shape checks a field of every row at once)."""
    return set(map(type, itertools.chain.from_iterable(columns)))


def cache_key(settings: RenderSettings) -> str:
    """The render cache's name: one per output folder, and per shard of it."""
    return cache_name(settings.path, settings.shard)


def cache_name(path: str, shard: Shard | None) -> str:
    """cache_key of the output folder `path` (as --path gave it) and `shard`."""
    if shard is None:
        return digest(path)[:12]
    return digest(path, f"{shard.index}/{shard.count}")[:12]
