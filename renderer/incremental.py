"""Incremental rendering: skip a ModelDeployment whose output cannot have changed.

A ModelDeployment's output is a function of its source object, its previously rendered hydrated
object (stickiness) and inputs shared by every object: Runway itself, the provider configs, the
pins, the schemas, the gateway settings. `inputs_digest` folds the shared inputs, named, into one
digest; `object_key` adds the per-object ones. The cache (in .git, never committed) remembers,
per folder, the key its output was rendered under, a digest of the files it wrote and the report.
An object is skipped only when its key is unchanged and its folder still holds exactly those
files, so an edited or half-written folder is rendered again. Anything unreadable in the cache
is treated as absent: the worst case is a full render.

Whether a folder still holds its files is decided, as git decides it for its index, by the
files' Stat (inode, size, mtime, ctime) recorded after the render that wrote them: a folder whose
Stats are unchanged is not read at all; any other folder is read and compared by content. The
one case a Stat cannot see is a file edited within the same clock tick right after Runway wrote
it (a few milliseconds, during a render); `--full` compares every file by content.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import providers
import renderer
from core.model.kinds import EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from kubeio.sources import parse_documents
from renderer.gitops import DiskTree, Stat, stat_of
from renderer.ownership import (
    SOURCES_FILE,
    Ownership,
    Removals,
    decide,
    output_key,
    read_record,
    record_text,
)
from renderer.render import (
    HYDRATED_FILE,
    Result,
    folder_of,
    namespace_files,
    render_external_guarded,
    render_many,
    tree_folders,
)

CACHE_FORMAT = 3
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
    """The key of one ModelDeployment's output, from the digest of its previous hydrated file
    (text_digest; `known`: the object's digest, if computed already); None if the object cannot
    be keyed (then it is always rendered, and rendering reports what is wrong with it)."""
    source = known or object_digest(obj)
    if source is None:
        return None
    return digest(shared, source, "\0" if previous_hydrated is None else "1" + previous_hydrated)


def text_digest(text: str | None) -> str | None:
    return None if text is None else digest(text)


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
    hydrated: str | None = None  # text_digest of the folder's hydrated file, as `stats` saw it
    stats: tuple[tuple[str, Stat], ...] | None = None  # the folder's files after writing


class RenderCache:
    """Entries by folder (namespace/name), read from and written to one file in .git (pickled
    tuples of plain values: loading 10,000 entries takes milliseconds)."""

    def __init__(
        self, entries: dict[str, Entry] | None = None, loaded: dict[str, Entry] | None = None
    ) -> None:
        self.entries = entries or {}
        self.loaded = loaded  # the entries in the file now: saving the same again is skipped

    @classmethod
    def load(cls, path: Path) -> RenderCache:
        try:
            with path.open("rb") as handle:
                raw = pickle.load(handle)
            if raw[0] != CACHE_FORMAT:
                return cls()
            entries = {folder: Entry(*fields) for folder, fields in raw[1].items()}
        except Exception:  # unreadable or of another shape: as if absent (a full render)
            log.debug("ignoring unreadable %s", path, exc_info=True)
            return cls()
        return cls(entries, loaded=dict(entries))

    def record_stats(self, root: Path) -> None:
        """The Stats of each folder rendered this time, after writing (see the module's text)."""
        for folder, entry in self.entries.items():
            if entry.stats is None:
                self.entries[folder] = replace(entry, stats=_folder_stats(root / folder))

    def save(self, path: Path) -> None:
        """Written aside and renamed into place: a killed render leaves the old cache or the new.
        Nothing is written when the file holds these entries already."""
        if self.loaded == self.entries:
            return
        entries = {
            folder: (
                e.key,
                e.files,
                e.error,
                e.warnings,
                e.engine,
                e.provider,
                e.schemas,
                e.hydrated,
                e.stats,
            )
            for folder, e in sorted(self.entries.items())
        }
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as handle:
            pickle.dump((CACHE_FORMAT, entries), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        self.loaded = dict(self.entries)


def _folder_stats(folder: Path) -> tuple[tuple[str, Stat], ...] | None:
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
        return tuple((name, stat_of(folder / name)) for name in names)
    except OSError:
        return None  # no folder (a failed object that never rendered): read next time


class Tree(Mapping[str, str]):
    """The rendered tree, path -> text. Paths in `unchanged` hold what `current` (the tree on
    disk) holds, and are read from it only when asked for; paths in `scanned` were found free of
    credentials when rendered."""

    def __init__(
        self,
        texts: dict[str, str],
        current: Mapping[str, str],
        unchanged: frozenset[str],
        scanned: frozenset[str] = frozenset(),
    ) -> None:
        self._texts = texts
        self._current = current
        self.unchanged = unchanged
        self.scanned = scanned
        self._order = sorted([*texts, *unchanged])

    def __getitem__(self, path: str) -> str:
        if path in self._texts:
            return self._texts[path]
        if path in self.unchanged:
            return self._current[path]
        raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, path: object) -> bool:
        return path in self._texts or path in self.unchanged

    @property
    def current(self) -> Mapping[str, str]:
        """The tree on disk this one was rendered against."""
        return self._current

    @property
    def written(self) -> Mapping[str, str]:
        """The texts rendered this time (what a write of this tree writes, where it writes)."""
        return self._texts


@dataclass(frozen=True)
class Rendered:
    """The outcome of one render: every object's result, the whole tree, the next cache."""

    results: list[Result]
    files: Tree
    cache: RenderCache
    rendered: int  # ModelDeployments actually rendered (the rest were unchanged)
    removals: Removals = field(default_factory=Removals)


def render_incremental(
    objects: Sequence[Mapping[str, Any]],
    *,
    current: Mapping[str, str],
    cache: RenderCache | None,
    shared: str,
    context: Callable[[], dict[str, Any]],
    digests: Mapping[int, str] | None = None,
    stats: Mapping[str, Stat] | None = None,
    ownership: Ownership | None = None,
) -> Rendered:
    """The tree render_all + tree_files would give, rendering only the ModelDeployments whose
    key or folder changed. `current` is the tree now (path -> text); `cache` None renders all;
    `context` gives render_guarded's shared arguments, called only when something renders;
    `digests` may hold objects' digests by id (from ParsedSources); `stats` the Stat of each
    path in `current` (a folder whose Stats are those its cache entry recorded is not read).
    `ownership` decides what happens to folders no source defines now (renderer.ownership);
    without it they are removed, as by a render of every source there is."""
    digests = digests or {}
    ownership = ownership or Ownership()
    objects = [o for o in objects if output_key(o) not in ownership.refused]
    names: dict[str, list[str]] = {}  # in name order: `current` is walked in path order
    for path in current if isinstance(current, DiskTree) else sorted(current):
        parts = path.split("/")
        if len(parts) == 3:
            names.setdefault(f"{parts[0]}/{parts[1]}", []).append(parts[2])
    views = {folder: _Folder(current, folder, held) for folder, held in names.items()}
    deployments = sorted(
        ((folder_of(o), o) for o in objects if o.get("kind") == MODEL_DEPLOYMENT),
        key=lambda pair: pair[0],
    )
    keys: dict[str, str | None] = {}
    hydrated: dict[str, str | None] = {}
    reused: list[Result] = []
    stale: list[Mapping[str, Any]] = []
    previous: dict[str, dict[str, Any]] = {}
    entries: dict[str, Entry] = {}
    for folder, obj in deployments:
        held = names.get(folder, [])
        signature = _stats_of(folder, held, stats)
        entry = cache.entries.get(folder) if cache is not None else None
        if entry is not None and signature is not None and entry.stats == signature:
            hydrated[folder], same = entry.hydrated, True  # untouched since: not read
        else:
            texts = {name: current[f"{folder}/{name}"] for name in held}
            hydrated[folder] = text_digest(texts.get(HYDRATED_FILE))
            same = entry is not None and (
                entry.files is None or entry.files == folder_digest(texts)
            )
        keys[folder] = key = object_key(shared, obj, hydrated[folder], digests.get(id(obj)))
        if entry is not None and same and key is not None and entry.key == key:
            kept: Mapping[str, str] = views.get(folder, {}) if entry.files is not None else {}
            reused.append(Result(folder, kept, *_report_of(entry), schemas=entry.schemas))
            if (entry.hydrated, entry.stats) != (hydrated[folder], signature):
                entry = replace(entry, hydrated=hydrated[folder], stats=signature)
            entries[folder] = entry
        else:
            stale.append(obj)
            before = _hydrated(current.get(f"{folder}/{HYDRATED_FILE}"))
            if before is not None:
                previous[folder] = before
    rendered = render_many(stale, previous=previous, **context()) if stale else []
    for obj, result in zip(stale, rendered, strict=True):
        key, written = keys[result.key], hydrated[result.key]
        if result.error is None:
            written = text_digest(result.files[HYDRATED_FILE])
        if result.settled:
            key = object_key(shared, obj, written, digests.get(id(obj)))
        if key is not None:
            entries[result.key] = Entry(
                key,
                None if result.error is not None else folder_digest(result.files),
                result.error,
                result.warnings,
                result.engine,
                result.provider,
                result.schemas,
                written,
            )
    externals = [
        render_external_guarded(o) for o in objects if o.get("kind") == EXTERNAL_MODEL_PROVIDER
    ]
    refused = [Result(key, error=error) for key, error in ownership.refused.items()]
    results = sorted(reused + rendered + externals + refused, key=lambda r: r.key)
    loaded = cache.loaded if cache is not None else None
    tree, removals = _owned_tree(results, views, current, ownership)
    return Rendered(results, tree, RenderCache(entries, loaded), len(stale), removals)


def _owned_tree(
    results: Sequence[Result],
    views: Mapping[str, _Folder],
    current: Mapping[str, str],
    ownership: Ownership,
) -> tuple[Tree, Removals]:
    """The tree, and what became of the folders no source defines now."""
    gone = set(views) - {r.key for r in results}
    if not ownership.roots:  # every source there is: what no source defines goes
        return _tree(results, views, current), Removals(removed=tuple(sorted(gone)))
    # The record is read only when something depends on it (a folder gone, or refused).
    record = read_record(current) if gone or ownership.refused else {}
    removals = decide(gone, record, ownership, results)
    left = {k: views[k] for k in sorted(gone - set(removals.removed))}
    tree = _tree(results, views, current, kept=left)
    return _with_record(tree, left, record, ownership), removals


def _with_record(
    tree: Tree,
    kept: Mapping[str, _Folder],
    record: Mapping[str, str],
    ownership: Ownership,
) -> Tree:
    """The tree with its SOURCES_FILE: this render's source for each folder it holds for a
    source given now, the recorded one for each folder it kept as it was."""
    held = {key for path in tree for key in [path.rsplit("/", 1)[0]] if key.count("/") == 1}
    given = {k for k in held if k in ownership.origins and k not in ownership.refused}
    now = {k: ownership.origins[k] for k in given}
    before = {k: record[k] for k in held if k in record and (k in kept or k not in now)}
    merged = {**before, **now}
    if not merged:
        return tree
    texts = {**tree.written, SOURCES_FILE: record_text(merged)}
    return Tree(texts, tree.current, tree.unchanged - {SOURCES_FILE}, tree.scanned)


def _tree(
    results: Sequence[Result],
    views: Mapping[str, _Folder],
    current: Mapping[str, str],
    *,
    kept: Mapping[str, _Folder] | None = None,
) -> Tree:
    """tree_files of `results`, where a folder taken as it is on disk is not read; `kept`:
    folders of no source given now, which stay as they are, and so do files outside any
    folder that are not Runway's (a README)."""
    texts: dict[str, str] = {}
    unchanged: set[str] = set()
    scanned = {r.key for r in results if r.scanned}
    folders = {**tree_folders(results, views), **(kept or {})}
    if kept is not None:
        unchanged.update(p for p in current if p.count("/") < 2 and not _is_runways(p))
    for folder, held in folders.items():
        if isinstance(held, _Folder):  # as on disk: an unchanged or a failed object's folder
            unchanged.update(held.paths())
        else:
            texts.update((f"{folder}/{name}", text) for name, text in held.items())
    checked = frozenset(p for p in texts if p.rsplit("/", 1)[0] in scanned)
    texts.update(namespace_files(folders))
    return Tree(texts, current, frozenset(unchanged), checked)


def _is_runways(path: str) -> bool:
    """A file outside the folders that Runway writes: the kustomizations and its record."""
    return path.rsplit("/", 1)[-1] == "kustomization.yaml" or path == SOURCES_FILE


def _stats_of(
    folder: str, held: Sequence[str], stats: Mapping[str, Stat] | None
) -> tuple[tuple[str, Stat], ...] | None:
    if stats is None:
        return None
    return tuple((name, stats[f"{folder}/{name}"]) for name in held)  # held is in name order


class _Folder(Mapping[str, str]):
    """One folder of `current`, name -> text, read only when asked for."""

    def __init__(self, current: Mapping[str, str], folder: str, held: Sequence[str]) -> None:
        self._current, self._folder, self._names = current, folder, held  # in name order

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise KeyError(name)
        return self._current[f"{self._folder}/{name}"]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def paths(self) -> list[str]:
        return [f"{self._folder}/{name}" for name in self._names]


def _report_of(entry: Entry) -> tuple[str | None, tuple[str, ...], str | None, str | None]:
    return entry.error, entry.warnings, entry.engine, entry.provider


def _hydrated(text: str | None) -> dict[str, Any] | None:
    """The previous hydrated ModelDeployment of a folder (the last document, as ever)."""
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


def object_digest(obj: Any) -> str | None:
    try:
        return digest(canonical(obj))
    except (ValueError, TypeError, RecursionError):
        return None
