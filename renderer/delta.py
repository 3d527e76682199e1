"""A render of the namespaces whose sources changed; every other namespace's part is the
stamp's.

A render's output is a function of its inputs and the tree (renderer.stamp). When the stamp's
inputs differ from a render's only in the bytes of some source files (the same settings, Runway
and provider configs, the same files in the same order), git vouches that the output folder
holds the stamped tree (renderer.cleantree), and the render cache was saved with that tree,
then a namespace none of those files renders into, before or now, is given by the same
documents, the same shared inputs and the same folders as when the stamp was made: a render of
everything gives it what the stamp recorded. So the render as usual runs restricted to the
changed files' namespaces, as a shard is (renderer.shard.Namespaces: the two files at the top
take in the other namespaces' parts as the tree holds them), and every other namespace's
results, cache entries and folders are kept as the stamp and the cache hold them.

A render with a failure anywhere removes nothing (renderer.ownership): the stamp's failures
outside the namespaces count. Not done (a render as usual instead) when a changed file holds or
held an InferenceProviderConfig (an input of every object), when the stamp withheld removals
or kept folders of sources outside the render's roots (a render of everything decides those
anew for every namespace), or when the stamp was made by another Runway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from renderer.folders import Result
from renderer.incremental import Rendered
from renderer.ownership import Removals
from renderer.rendercache import RenderCache
from renderer.shard import Namespaces, Part
from renderer.stamp import Source, Stamp


def changed_namespaces(
    stamp: Stamp, sources: Sequence[Source], fingerprint: str, shard: Part | None
) -> Namespaces | None:
    """The namespaces the source files whose bytes changed render into, before or now (within
    `shard`); None when a render restricted to them would not give what a render of
    everything gives (see the module's text)."""
    if stamp.fingerprint != fingerprint or stamp.removals != Removals():
        return None
    before = {path: (key, names, configs) for path, key, names, configs in stamp.sources}
    if [path for path, *_ in sources] != list(before):
        return None
    names: set[str] = set()
    for path, key, namespaces, configs in sources:
        old_key, old_namespaces, old_configs = before[path]
        if key == old_key:
            continue
        if configs or old_configs:
            return None
        names.update(namespaces, old_namespaces)
    return Namespaces(frozenset(names), shard) if names else None


def failures_elsewhere(stamp: Stamp, part: Part) -> int:
    """The stamp's failed results outside `part`."""
    return sum(
        1 for key, _, error, *_ in stamp.rows if error is not None and not part.owns_key(key)
    )


def widened(done: Rendered, stamp: Stamp, cache: RenderCache, part: Part, root: Path) -> Rendered:
    """`done` (the render of `part`) with every other namespace's results as the stamp
    recorded them (their files read from `root` when asked for) and cache entries as `cache`
    holds them."""
    kept: list[Result] = [r for r in stamp.results(root) if not part.owns_key(r.key)]
    results = sorted([*done.results, *kept], key=lambda r: r.key)
    entries = {k: e for k, e in cache.entries.items() if not part.owns_key(k)}
    entries.update(done.cache.entries)
    return replace(done, results=results, cache=RenderCache(entries, done.cache.loaded))


def source_rows(
    paths: Sequence[str], keys: Sequence[str], namespaces: Mapping[str, set[str]], configs: set[str]
) -> list[Source]:
    """The stamp's rows of the source files read (`paths` with their `keys`, in order): the
    namespaces each one's documents render into, and whether it holds a provider config."""
    return [
        (path, key, tuple(sorted(namespaces.get(path, ()))), path in configs)
        for path, key in zip(paths, keys, strict=True)
    ]
