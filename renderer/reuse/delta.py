"""A render of the namespaces whose sources changed; every other namespace's part is the
stamp's.

A render's output is a function of its inputs and the tree (renderer.reuse.stamp). When the stamp's
inputs differ from a render's only in the bytes of some source files (the same settings, Runway
and provider configs, the same files in the same order), git vouches that the output folder
holds the stamped tree (renderer.reuse.cleantree), and the render cache was saved with that tree,
then a namespace none of those files renders into, before or now, is given by the same
documents, the same shared inputs and the same folders as when the stamp was made: a render of
everything gives it what the stamp recorded. So the render as usual runs restricted to the
changed files' namespaces, as a shard is (renderer.output.shard.Namespaces: the two files at the top
take in the other namespaces' parts as the tree holds them), and every other namespace's
results, cache entries and folders are kept as the stamp and the cache hold them.

A render with a failure anywhere removes nothing (renderer.output.ownership): the stamp's failures
outside the namespaces count. Not done (a render as usual instead) when a changed file holds or
held an InferenceProviderConfig (an input of every object), when the stamp withheld removals
or kept folders of sources outside the render's roots (a render of everything decides those
anew for every namespace), or when the stamp was made by another Runway.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path

from core.model.kinds import INFERENCE_PROVIDER_CONFIG
from kubeio.sources import Document, expand_lists
from renderer.output.ownership import Removals, output_key
from renderer.output.shard import Namespaces, Part
from renderer.reuse.incremental import Rendered
from renderer.reuse.rendercache import RenderCache
from renderer.reuse.sourcekeys import SourceFile
from renderer.reuse.stamp import Source, Stamp


def part_to_render(
    stamp: Stamp,
    files: Sequence[SourceFile],
    documents: Callable[[SourceFile], list[Document]],
    fingerprint: str,
    shard: Part | None,
) -> tuple[Namespaces, list[Document], set[str]] | None:
    """The namespaces the source `files` whose bytes changed render into, before or now
    (within `shard`), the documents a render of them reads (each `kind: List` as its items):
    every document of every file that renders into them or holds a provider config, in order,
    and the paths of those files; the other files' `documents` are never asked for. None when
    a render restricted to them would not give what a render of everything gives (see the
    module's text)."""
    if stamp.fingerprint != fingerprint or stamp.removals != Removals():
        return None
    before = {path: (key, names, configs) for path, key, names, configs in stamp.sources}
    if [str(f.path) for f in files] != list(before):
        return None
    now: dict[str, list[Document]] = {}
    names: set[str] = set()
    for found in files:
        key, old_names, old_configs = before[str(found.path)]
        if found.key == key:
            continue
        docs = list(expand_lists(documents(found)))
        if old_configs or any(d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG for d in docs):
            return None
        keys = (output_key(d.obj) for d in docs)
        names.update(old_names, (k.split("/", 1)[0] for k in keys if k is not None))
        now[str(found.path)] = docs
    if not names:
        return None
    read: list[Document] = []
    paths = set(now)
    for found in files:
        path = str(found.path)
        _, old_names, old_configs = before[path]
        if path in now:
            read += now[path]
        elif old_configs or names.intersection(old_names):
            read += expand_lists(documents(found))
            paths.add(path)
    return Namespaces(frozenset(names), shard), read, paths


def failures_elsewhere(stamp: Stamp, part: Part) -> int:
    """The stamp's failed results outside `part`."""
    return sum(
        1 for key, _, error, *_ in stamp.rows if error is not None and not part.owns_key(key)
    )


def widened(done: Rendered, stamp: Stamp, cache: RenderCache, part: Part, root: Path) -> Rendered:
    """`done` (the render of `part`) with every other namespace's results as the stamp
    recorded them (their files read from `root` when asked for) and cache entries as `cache`
    holds them."""
    kept = stamp.results(root, lambda key: not part.owns_key(key))
    results = sorted([*done.results, *kept], key=lambda r: r.key)
    return replace(done, results=results, cache=cache.merged(part.owns, done.cache))


def source_rows(
    files: Sequence[SourceFile],
    docs: Sequence[Document],
    keys: Sequence[str | None],
    stamp: Stamp | None,
    read: Collection[str],
) -> list[Source]:
    """The stamp's rows of the source `files` (in order): the namespaces each one's documents
    render into, and whether it holds a provider config. `docs` (with their output `keys`) are
    the documents of the files whose paths are `read`; any other file is as `stamp` recorded it
    (its bytes are the same: part_to_render)."""
    namespaces: dict[str, set[str]] = {}
    configs: set[str] = set()
    for doc, key in zip(docs, keys, strict=True):
        if key is not None:
            namespaces.setdefault(doc.origin, set()).add(key.split("/", 1)[0])
        elif doc.obj.get("kind") == INFERENCE_PROVIDER_CONFIG:
            configs.add(doc.origin)
    recorded = {path: (names, held) for path, _, names, held in stamp.sources} if stamp else {}
    rows: list[Source] = []
    for found in files:
        path = str(found.path)
        if path in read or path not in recorded:
            names = tuple(sorted(namespaces.get(path, ())))
            rows.append(Source(path, found.key, names, path in configs))
        else:
            rows.append(Source(path, found.key, *recorded[path]))
    return rows
