"""Incremental rendering: skip a ModelDeployment whose output cannot have changed.

An object is skipped only when its key (renderer.reuse.digests.render_key) is unchanged and its folder
still holds exactly the files its last render wrote (renderer.reuse.rendercache), so an edited or
half-written folder is rendered again.

Whether a folder still holds its files is decided, as git decides it for its index, by the
files' Stat (inode, size, mtime, ctime) recorded after the render that wrote them: a folder whose
Stats are unchanged is not read at all; any other folder is read and compared by content. The
one case a Stat cannot see is a file edited within the same clock tick right after Runway wrote
it (a few milliseconds, during a render); `--full` compares every file by content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.model.kinds import EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from kubeio.sources import parse_documents
from renderer.git.disk import DiskTree
from renderer.git.writer import Stat
from renderer.output.folders import HYDRATED_FILE, Result, folder_of
from renderer.output.ownership import Ownership, Removals, decide, output_key, read_record
from renderer.output.render import RenderContext, render_chunks, render_external_guarded
from renderer.output.tree import Folder, Tree, build_tree, folders_of, with_record
from renderer.reuse.digests import folder_digest, render_key, text_digest
from renderer.reuse.rendercache import Entry, RenderCache, Stats, packed


@dataclass(frozen=True)
class Rendered:
    """The outcome of one render: every object's result, the whole tree, the next cache."""

    results: list[Result]
    files: Tree
    cache: RenderCache
    rendered: int  # ModelDeployments actually rendered (the rest were unchanged)
    removals: Removals = field(default_factory=Removals)
    # The next render, of the same inputs against this tree, reuses every ModelDeployment: each
    # has a cache entry under the key that render will compute (renderer.reuse.stamp relies on it).
    stable: bool = False
    unchanged: int = 0  # results taken from the last render that rendered (a failure is no success)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What to render again, and what is reused as it is."""

    stale: list[Mapping[str, Any]]
    previous: dict[str, dict[str, Any]]  # folder -> its hydrated object, for the stale ones
    reused: list[Result]
    entries: dict[str, Entry]  # of the reused folders
    keys: dict[str, str | None]
    hydrated: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class Begun:
    """A render begun: the Results of the ModelDeployments that render again, a chunk at a
    time as they are rendered (`chunks`), and what finish() needs besides them."""

    chunks: Iterator[list[Result]]
    stale: list[Mapping[str, Any]]
    plan: _Plan
    objects: Sequence[Mapping[str, Any]]
    views: Mapping[str, Folder]
    current: Mapping[str, str]
    cache: RenderCache | None
    shared: str
    digests: Mapping[int, str]
    ownership: Ownership

    def gathered(self) -> list[Result]:
        """The Results of every chunk not taken yet, rendering them now (in order)."""
        return [result for chunk in self.chunks for result in chunk]


def begin(
    objects: Sequence[Mapping[str, Any]],
    *,
    current: Mapping[str, str],
    cache: RenderCache | None,
    shared: str,
    context: Callable[[], RenderContext],
    digests: Mapping[int, str] | None = None,
    stats: Mapping[str, Stat] | None = None,
    ownership: Ownership | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Begun:
    """What renders again and what is reused. `current` is the tree now (path -> text); `cache`
    None renders all; `context` gives what every object renders with, called only when
    something renders; `digests` may hold objects' digests by id (from ParsedSources); `stats`
    the Stat of each path in `current` (a folder whose Stats are those its cache entry recorded
    is not read). `ownership` decides what happens to folders no source defines now
    (renderer.output.ownership); without it they are removed, as by a render of every source
    there is. `progress` is told (rendered so far, to render) as the stale ModelDeployments
    render, which they do as the chunks are taken. The render of every object is
    finish(begun, begun.gathered())."""
    digests = digests or {}
    ownership = ownership or Ownership()
    if ownership.refused:  # the folders two sources define: neither is rendered
        objects = [o for o in objects if output_key(o) not in ownership.refused]
    # in name order: `current` is walked in path order
    views = folders_of(current, current if isinstance(current, DiskTree) else sorted(current))
    deployments = sorted(
        ((folder_of(o), o) for o in objects if o.get("kind") == MODEL_DEPLOYMENT),
        key=lambda pair: pair[0],
    )
    plan = _plan(deployments, views, current, cache, shared=shared, digests=digests, stats=stats)
    stale = plan.stale
    told = None if progress is None else lambda done: progress(done, len(stale))
    chunks: Iterator[list[Result]] = (
        render_chunks(stale, previous=plan.previous, context=context(), progress=told)
        if stale
        else iter(())
    )
    return Begun(chunks, stale, plan, objects, views, current, cache, shared, digests, ownership)


def finish(begun: Begun, rendered: Sequence[Result]) -> Rendered:
    """The render, its stale ModelDeployments `rendered` (in order): every result, the tree,
    the removals, the next cache."""
    plan, shared, digests = begun.plan, begun.shared, begun.digests
    entries = dict(plan.entries)
    stable = True
    for obj, result in zip(begun.stale, rendered, strict=True):
        key, written = plan.keys[result.key], plan.hydrated[result.key]
        if result.error is None:
            written = text_digest(result.files[HYDRATED_FILE])
        if result.settled:
            key = render_key(shared, obj, written, digests.get(id(obj)))
        # next time the key is computed from `written`: the same key only when settled, or
        # when the hydrated file did not change
        stable = (
            stable and key is not None and (result.settled or written == plan.hydrated[result.key])
        )
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
        render_external_guarded(o)
        for o in begun.objects
        if o.get("kind") == EXTERNAL_MODEL_PROVIDER
    ]
    ownership = begun.ownership
    refused = [Result(key, error=error) for key, error in ownership.refused.items()]
    results = sorted([*plan.reused, *rendered, *externals, *refused], key=lambda r: r.key)
    tree, removals = _owned_tree(results, begun.views, begun.current, ownership)
    cache = begun.cache
    after = cache.succeeded_by(entries) if cache is not None else RenderCache(entries)
    unchanged = sum(1 for r in plan.reused if r.error is None)
    return Rendered(results, tree, after, len(begun.stale), removals, stable, unchanged)


def _plan(
    deployments: Sequence[tuple[str, Mapping[str, Any]]],
    views: Mapping[str, Folder],
    current: Mapping[str, str],
    cache: RenderCache | None,
    *,
    shared: str,
    digests: Mapping[int, str],
    stats: Mapping[str, Stat] | None,
) -> _Plan:
    """Each ModelDeployment reused (its key and folder as its cache entry recorded) or stale."""
    plan = _Plan([], {}, [], {}, {}, {})
    for folder, obj in deployments:
        view = views.get(folder)
        held = list(view) if view is not None else []
        signature = _stats_of(folder, held, stats)
        entry = cache.entry(folder) if cache is not None else None
        if entry is not None and signature is not None and entry.stats == signature:
            plan.hydrated[folder], same = entry.hydrated, True  # untouched since: not read
        else:
            texts = {name: current[f"{folder}/{name}"] for name in held}
            plan.hydrated[folder] = text_digest(texts.get(HYDRATED_FILE))
            same = entry is not None and (
                entry.files is None or entry.files == folder_digest(texts)
            )
        key = render_key(shared, obj, plan.hydrated[folder], digests.get(id(obj)))
        plan.keys[folder] = key
        if entry is not None and same and key is not None and entry.key == key:
            kept: Mapping[str, str] = view if view is not None and entry.files is not None else {}
            plan.reused.append(Result(folder, kept, *_report_of(entry), schemas=entry.schemas))
            if (entry.hydrated, entry.stats) != (plan.hydrated[folder], signature):
                entry = replace(entry, hydrated=plan.hydrated[folder], stats=signature)
            plan.entries[folder] = entry
        else:
            plan.stale.append(obj)
            before = _hydrated(current.get(f"{folder}/{HYDRATED_FILE}"))
            if before is not None:
                plan.previous[folder] = before
    return plan


def _owned_tree(
    results: Sequence[Result],
    views: Mapping[str, Folder],
    current: Mapping[str, str],
    ownership: Ownership,
) -> tuple[Tree, Removals]:
    """The tree, and what became of the folders no source defines now."""
    gone = set(views) - {r.key for r in results}
    if not ownership.roots:  # every source there is: what no source defines goes
        return build_tree(results, views, current), Removals(removed=tuple(sorted(gone)))
    # The record is read only when something depends on it (a folder gone, or refused).
    record = read_record(current) if gone or ownership.refused else {}
    removals = decide(gone, record, ownership, results)
    left = {k: views[k] for k in sorted(gone - set(removals.removed))}
    tree = build_tree(results, views, current, kept=left)
    return with_record(tree, left, record, ownership), removals


def _stats_of(folder: str, held: Sequence[str], stats: Mapping[str, Stat] | None) -> Stats | None:
    if stats is None:
        return None
    return packed([(name, stats[f"{folder}/{name}"]) for name in held])  # held is in name order


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
