"""Caches of parsed inputs, in .git: source files by content, and anything built from inputs
whose digest names the entry (the parsed upstream schemas)."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from core.fields.errors import SourceError
from kubeio.files import atomic_write
from kubeio.sources import Document, expand_lists, parse_documents, yaml_files
from renderer.digests import digest, object_digest

log = logging.getLogger(__name__)


class SourceFile(NamedTuple):
    """A source file as read: its path, its bytes and its file_key."""

    path: Path
    data: bytes
    key: str


class ParsedSources:
    """Source files parsed once per content: the documents of each YAML file and each object's
    canonical digest, pickled in a folder (inside .git) under the digest of Runway's fingerprint
    and the file's bytes. Files of an earlier content are dropped by `prune`. Without a folder,
    or with an unreadable entry, files are parsed as usual."""

    def __init__(self, folder: Path | None, fingerprint: str) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.used: set[str] = set()
        self.digests: dict[int, str] = {}  # id(object) -> digest(canonical(object))
        self.pending: dict[str, Any] = {}  # parsed this time, stored by `finish`
        self.read_keys: list[str] = []  # file_key of every file read, in order (renderer.stamp)
        self.read_paths: list[str] = []  # and its path

    def read(self, paths: Sequence[str]) -> list[Document]:
        """The documents of the files, each `kind: List` as its items (kubeio.sources)."""
        docs: list[Document] = []
        for found in self.files(paths):
            docs += self.documents(found)
        return list(expand_lists(docs))

    def files(self, paths: Sequence[str]) -> list[SourceFile]:
        """The files reading `paths` reads (folders walked as kubeio.sources walks them), each
        read and keyed, in order; their parsed documents stay cached whether asked for or not."""
        found = []
        for path in yaml_files(paths):
            try:
                data = path.read_bytes()
            except OSError as err:
                raise SourceError(str(path), f"cannot read: {err.strerror or err}") from None
            key = file_key(path, data)
            self.read_keys.append(key)
            self.read_paths.append(str(path))
            self.used.add(f"{digest(self.fingerprint, key)}.pickle")
            found.append(SourceFile(path, data, key))
        return found

    def documents(self, source: SourceFile) -> list[Document]:
        """One file's documents (not yet expanded: see `read`), from the cache or parsed."""
        path, data, key = source
        name = digest(self.fingerprint, key)
        entry = self.folder / f"{name}.pickle" if self.folder is not None else None
        if entry is not None and entry.is_file():
            try:
                with entry.open("rb") as handle:
                    pairs, digests = pickle.load(handle)
                docs = [Document(str(path), index, obj) for index, obj in pairs]
                self.digests.update((id(d.obj), k) for d, k in zip(docs, digests, strict=True))
                return docs
            except Exception:  # a damaged entry is parsed again
                log.debug("ignoring unreadable %s", entry, exc_info=True)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SourceError(str(path), f"cannot read: {err}") from None
        docs = list(parse_documents(text, str(path)))
        digests = [object_digest(d.obj) for d in docs]
        self.digests.update((id(d.obj), k) for d, k in zip(docs, digests, strict=True) if k)
        # Plain pairs, not Documents: unpickling 10,000 dataclasses cost a tenth of a second.
        self.pending[f"{name}.pickle"] = ([(d.index, d.obj) for d in docs], digests)
        return docs

    def _store(self, entry: Path, value: Any) -> None:
        try:
            # equal strings are one object already (kubeio.yamlio): pickle writes each once
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            atomic_write(entry, data)
        except (OSError, pickle.PicklingError, RecursionError):
            log.debug("not caching %s", entry, exc_info=True)

    def finish(self, folder: Path) -> None:
        """Store what was parsed this time in `folder` (the repository may not have existed when
        the sources were read) and drop the entries of files not read this time."""
        for name, value in self.pending.items():
            self._store(folder / name, value)
        self.pending.clear()
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.name not in self.used:
                    entry.unlink(missing_ok=True)


def file_key(path: Path, data: bytes) -> str:
    """One source file as read: its path and its bytes."""
    return digest(str(path), data)


def cached(path: Path, build: Callable[[], Any]) -> Any:
    """`build()`, pickled at `path` the first time and loaded from there after (the caller puts
    the digest of everything `build` reads into the name). Any trouble means building anew."""
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)
    except FileNotFoundError:
        pass
    except Exception:
        log.debug("ignoring unreadable %s", path, exc_info=True)
    value = build()
    try:
        atomic_write(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        log.debug("not caching %s", path, exc_info=True)
    return value
