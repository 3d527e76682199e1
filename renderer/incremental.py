"""Incremental rendering: skip a ModelDeployment whose output cannot have changed.

A ModelDeployment's output is a function of its source object, its previously rendered hydrated
object (stickiness) and inputs shared by every object: Runway itself, the provider configs, the
pins, the schemas, the gateway settings. `inputs_digest` folds the shared inputs, named, into one
digest; `object_key` adds the per-object ones. The cache (in .git, never committed) remembers,
per folder, the key its output was rendered under, a digest of the files it wrote and the report.
An object is skipped only when its key is unchanged and its folder still holds exactly those
files, so an edited or half-written folder is rendered again. Anything unreadable in the cache
is treated as absent: the worst case is a full render.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import providers
import renderer
from providers.errors import SourceError
from providers.model import EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from renderer.render import (
    HYDRATED_FILE,
    Result,
    folder_of,
    render_external_guarded,
    render_many,
    tree_files,
)
from renderer.sources import Document, parse_documents, yaml_files

CACHE_FORMAT = 2
log = logging.getLogger(__name__)


def digest(*parts: bytes | str) -> str:
    """One digest of several byte strings (length-prefixed, so boundaries cannot shift)."""
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def canonical(obj: Any) -> str:
    """A stable text of a YAML-loaded object; types JSON lacks keep their type name."""
    return json.dumps(
        obj,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=lambda v: f"<{type(v).__name__}>{v!r}",
    )


def inputs_digest(inputs: Mapping[str, bytes | str]) -> str:
    """The shared inputs of rendering, by name: adding an input is one more entry."""
    return digest(*(part for name in sorted(inputs) for part in (name, inputs[name])))


def files_digest(paths: Path | list[Path]) -> str:
    """The bytes of the files (or of every file under a folder), by relative path."""
    roots = [paths] if isinstance(paths, Path) else paths
    parts: list[bytes | str] = []
    for root in roots:
        found = [root]
        if root.is_dir():
            found = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc")
        for path in found:
            parts += [
                str(path.relative_to(root)) if root.is_dir() else path.name,
                path.read_bytes(),
            ]
    return digest(*parts)


def source_fingerprint(packages: list[Path], version: str) -> str:
    """Runway's own version: the package version and the bytes of its code and data."""
    return digest(version, files_digest(packages))


def object_key(
    shared: str, obj: Mapping[str, Any], previous_hydrated: str | None, known: str | None = None
) -> str | None:
    """The key of one ModelDeployment's output (`known`: the object's digest, if computed
    already); None if the object cannot be keyed (then it is always rendered, and rendering
    reports what is wrong with it)."""
    source = known or _object_digest(obj)
    if source is None:
        return None
    return digest(shared, source, "\0" if previous_hydrated is None else "1" + previous_hydrated)


def folder_digest(files: Mapping[str, str] | None) -> str:
    """The files of one output folder, by name."""
    h = hashlib.blake2b(digest_size=20)
    for name, text in sorted((files or {}).items()):
        # Names and YAML text hold no NUL, so NUL separates them unambiguously.
        h.update(f"{name}\0{text}\0".encode())
    return h.hexdigest()


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


class RenderCache:
    """Entries by folder (namespace/name), read from and written to one JSON file."""

    def __init__(self, entries: dict[str, Entry] | None = None) -> None:
        self.entries = entries or {}

    @classmethod
    def load(cls, path: Path) -> RenderCache:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("format") != CACHE_FORMAT:
                return cls()
            return cls(
                {
                    folder: Entry(
                        e[0], e[1], e[2], tuple(e[3]), e[4], e[5], tuple((k, v) for k, v in e[6])
                    )
                    for folder, e in raw["entries"].items()
                }
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return cls()

    def save(self, path: Path) -> None:
        """Written aside and renamed into place: a killed render leaves the old cache or the new."""
        entries = {
            folder: [
                e.key,
                e.files,
                e.error,
                list(e.warnings),
                e.engine,
                e.provider,
                [list(s) for s in e.schemas],
            ]
            for folder, e in sorted(self.entries.items())
        }
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(
            json.dumps({"format": CACHE_FORMAT, "entries": entries}, separators=(",", ":")),
            encoding="utf-8",
        )
        os.replace(temporary, path)


@dataclass(frozen=True)
class Rendered:
    """The outcome of one render: every object's result, the whole tree, the next cache."""

    results: list[Result]
    files: dict[str, str]
    cache: RenderCache
    rendered: int  # ModelDeployments actually rendered (the rest were unchanged)


def render_incremental(
    objects: Sequence[Mapping[str, Any]],
    *,
    current: Mapping[str, str],
    cache: RenderCache | None,
    shared: str,
    context: Callable[[], dict[str, Any]],
    digests: Mapping[int, str] | None = None,
) -> Rendered:
    """The tree render_all + tree_files would give, rendering only the ModelDeployments whose
    key or folder changed. `current` is the tree now (path -> text); `cache` None renders all;
    `context` gives render_guarded's shared arguments, called only when something renders;
    `digests` may hold objects' digests by id (from ParsedSources)."""
    digests = digests or {}
    folders: dict[str, dict[str, str]] = {}
    for path, text in current.items():
        parts = path.split("/")
        if len(parts) == 3:
            folders.setdefault(f"{parts[0]}/{parts[1]}", {})[parts[2]] = text
    deployments = sorted((o for o in objects if o.get("kind") == MODEL_DEPLOYMENT), key=folder_of)
    keys: dict[str, str | None] = {}
    reused: list[Result] = []
    stale: list[Mapping[str, Any]] = []
    entries: dict[str, Entry] = {}
    for obj in deployments:
        folder = folder_of(obj)
        hydrated = folders.get(folder, {}).get(HYDRATED_FILE)
        keys[folder] = key = object_key(shared, obj, hydrated, digests.get(id(obj)))
        entry = cache.entries.get(folder) if cache is not None else None
        if entry is not None and _unchanged(entry, key, folders.get(folder)):
            kept = folders.get(folder, {}) if entry.files is not None else {}
            reused.append(Result(folder, kept, *_report_of(entry), schemas=entry.schemas))
            entries[folder] = entry
        else:
            stale.append(obj)
    previous: dict[str, dict[str, Any]] = {}
    for obj in stale:
        before = _hydrated(folders.get(folder_of(obj), {}))
        if before is not None:
            previous[folder_of(obj)] = before
    rendered = render_many(stale, previous=previous, **context()) if stale else []
    for obj, result in zip(stale, rendered, strict=True):
        key = keys[result.key]
        if result.settled:
            key = object_key(shared, obj, result.files[HYDRATED_FILE], digests.get(id(obj)))
        if key is not None:
            files = None if result.error is not None else folder_digest(result.files)
            entries[result.key] = Entry(
                key,
                files,
                result.error,
                result.warnings,
                result.engine,
                result.provider,
                result.schemas,
            )
    externals = [
        render_external_guarded(o) for o in objects if o.get("kind") == EXTERNAL_MODEL_PROVIDER
    ]
    results = sorted(reused + rendered + externals, key=lambda r: r.key)
    return Rendered(results, tree_files(results, folders), RenderCache(entries), len(stale))


def _unchanged(entry: Entry, key: str | None, files: Mapping[str, str] | None) -> bool:
    """Same key, and the folder still holds what that render wrote (a failed object keeps
    whatever its folder holds, and the key already covers its hydrated file)."""
    if key is None or entry.key != key:
        return False
    return entry.files is None or entry.files == folder_digest(files)


def _report_of(entry: Entry) -> tuple[str | None, tuple[str, ...], str | None, str | None]:
    return entry.error, entry.warnings, entry.engine, entry.provider


def _hydrated(folder: Mapping[str, str]) -> dict[str, Any] | None:
    """The previous hydrated ModelDeployment of a folder (the last document, as ever)."""
    text = folder.get(HYDRATED_FILE)
    if text is None:
        return None
    found = None
    for doc in parse_documents(text, HYDRATED_FILE):
        found = doc.obj
    return found


def runway_fingerprint() -> str:
    """Runway's own version: the package version and the bytes of the code and data that
    rendering runs (providers/ with its configs, pins and catalogs, and renderer/)."""
    packages = [Path(providers.__file__).parent, Path(renderer.__file__).parent]
    try:
        version = importlib.metadata.version("runway")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return source_fingerprint(packages, version)


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

    def read(self, paths: Sequence[str]) -> list[Document]:
        docs: list[Document] = []
        for path in yaml_files(paths):
            docs += self._read_file(path)
        return docs

    def _read_file(self, path: Path) -> list[Document]:
        try:
            data = path.read_bytes()
        except OSError as err:
            raise SourceError(str(path), f"cannot read: {err.strerror or err}") from None
        name = digest(self.fingerprint, str(path), data)
        entry = self.folder / f"{name}.pickle" if self.folder is not None else None
        self.used.add(f"{name}.pickle")
        if entry is not None and entry.is_file():
            try:
                with entry.open("rb") as handle:
                    docs, digests = pickle.load(handle)
                self.digests.update((id(d.obj), k) for d, k in zip(docs, digests, strict=True))
                return list(docs)
            except Exception:  # a damaged entry is parsed again
                log.debug("ignoring unreadable %s", entry, exc_info=True)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SourceError(str(path), f"cannot read: {err}") from None
        docs = list(parse_documents(text, str(path)))
        digests = [_object_digest(d.obj) for d in docs]
        self.digests.update((id(d.obj), k) for d, k in zip(docs, digests, strict=True) if k)
        self.pending[f"{name}.pickle"] = (docs, digests)
        return docs

    def _store(self, entry: Path, value: Any) -> None:
        try:
            entry.parent.mkdir(exist_ok=True)
            temporary = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
            with temporary.open("wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, entry)
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


def _object_digest(obj: Any) -> str | None:
    try:
        return digest(canonical(obj))
    except (ValueError, TypeError, RecursionError):
        return None


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
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        log.debug("not caching %s", path, exc_info=True)
    return value
