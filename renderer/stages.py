"""The stages of a render after its plan (renderer.plan), each a function of typed values:

- begin(plan, cache, clean) -> Rendering: the render stage, against the tree on disk now; it
  renders only the ModelDeployments whose inputs changed (renderer.reuse.incremental), as a
  generator of rendered folders; render(...) -> Rendition takes them all in memory (--check);
- write(rendering) -> (Rendition, Written): the write stage takes that generator, writing
  each folder as it is rendered, then the rest of the tree (only files whose bytes change,
  none holding a credential), and finishes the render (finish: a shard's shared files, and
  a render of some namespaces widened with the stamp's results, renderer.reuse.delta);
- commit(plan, written, rendition) -> the commit made, if any (renderer.git.commits);
- keep(plan, rendition, tree): the stamp of a render that committed (renderer.reuse.stamp),
  save_cache: the render cache, saved once at the end;
- report(...): the RenderReport.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from pathlib import Path

from core.checks.credentials import credential_kind
from core.fields.errors import RunwayError
from renderer.git import commits
from renderer.git.bulk import Blobs, BlobSink
from renderer.git.commits import BULK
from renderer.git.disk import DiskTree, scan, tree_writer, write_tree
from renderer.git.writer import Stat, TreeWriter
from renderer.output.folders import METADATA_FILE, Result
from renderer.output.ownership import another_file, claims, read_record
from renderer.output.tree import Folder, Tree, WrittenFolder
from renderer.plan import Plan
from renderer.reuse import incremental
from renderer.reuse.delta import widened
from renderer.reuse.digests import folder_digest
from renderer.reuse.incremental import Begun, Rendered
from renderer.reuse.rendercache import RenderCache
from renderer.reuse.stamp import Stamp
from renderer.settings import RenderReport

# ModelDeployments rendered from which the write stage sends each file to git as it writes it:
# four files or more each, past BULK files (the count from which the commit is a fast-import)
STREAM_BLOBS = BULK // 4


@dataclass(frozen=True, slots=True)
class Rendition:
    """One render in memory: what it rendered (`done`), the tree on disk it rendered against
    (`current`), and the files that change from it."""

    done: Rendered
    current: Mapping[str, str]
    changes: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class Written:
    """What the write stage did: the paths (in the output folder) written or removed, in
    order, and the blobs of those written, when they were sent to git as they were
    (renderer.git.bulk: their marks are their places in `touched`)."""

    touched: tuple[str, ...]
    blobs: Blobs | None = None


def load_cache(planned: Plan) -> RenderCache | None:
    """The last render's cache; None with --full (every ModelDeployment renders)."""
    return None if planned.full else RenderCache.load(planned.where.cache)


@dataclass(frozen=True, slots=True)
class Rendering:
    """A render begun (renderer.reuse.incremental.begin): its rendered folders come as the
    generator `begun.chunks` yields them, against the tree on disk now (`current`; `whole`
    when a shard renders against its part of it)."""

    planned: Plan
    begun: Begun
    current: Mapping[str, str]
    whole: DiskTree


def begin(planned: Plan, cache: RenderCache | None, clean: DiskTree | None = None) -> Rendering:
    """The render stage, begun against the tree on disk now (`clean`: as git vouched for it,
    else scanned); `cache` None renders everything (--full). A shard renders against its part
    of the tree. Nothing renders until the chunks are taken (by render, or by write)."""
    where = planned.where
    whole = clean if clean is not None else scan(where.repo, where.subdir)
    part = planned.part
    current = whole if part is None else part.view(whole)
    ownership = planned.ownership
    if ownership.roots and ownership.origins:  # a folder another file owns is refused
        another = another_file(where.repo.work, Path.cwd().resolve())
        taken = claims(ownership, read_record(whole), another)
        ownership = replace(ownership, refused={**ownership.refused, **taken})
    begun = incremental.begin(
        planned.objects,
        current=current,
        cache=cache,
        shared=planned.inputs.shared,
        context=planned.inputs.context,
        digests=planned.read.parsed.digests,
        stats=None if planned.full else current.stats,  # --full: compared by content
        ownership=ownership,
        progress=planned.progress,
    )
    if planned.metadata is not None:
        chunks = _with_metadata(begun.chunks, begun.views, planned.metadata)
        begun = replace(begun, chunks=chunks)
    return Rendering(planned, begun, current, whole)


def _with_metadata(
    chunks: Iterator[list[Result]], views: Mapping[str, Folder], metadata: str
) -> Iterator[list[Result]]:
    """The chunks, each rendered folder with its METADATA_FILE: the one on disk when its other
    files are as on disk (a new source commit that changes nothing in it rewrites nothing),
    else `metadata` ("": none, as with --check)."""
    for chunk in chunks:
        yield [_metadata_of(result, views.get(result.key), metadata) for result in chunk]


def _metadata_of(result: Result, view: Folder | None, metadata: str) -> Result:
    if result.error is not None or not result.files:
        return result
    text = metadata
    if view is not None and METADATA_FILE in view:
        names = [name for name in view if name != METADATA_FILE]
        same = sorted(result.files) == names and all(result.files[n] == view[n] for n in names)
        if same or not metadata:
            text = view[METADATA_FILE]
    if not text:
        return result
    return replace(result, files={**result.files, METADATA_FILE: text})


def render(planned: Plan, cache: RenderCache | None, clean: DiskTree | None = None) -> Rendition:
    """The render in memory, nothing written (--check)."""
    rendering = begin(planned, cache, clean)
    return finish(rendering, rendering.begun.gathered())


def finish(
    rendering: Rendering,
    rendered: Sequence[Result],
    stamp: Stamp | None = None,
    streamed: Set[str] = frozenset(),
) -> Rendition:
    """The render, its stale ModelDeployments `rendered`: a shard takes the shared files whole
    (renderer.output.shard); with `stamp`, a render of some namespaces takes the stamp's
    results and the cache's entries of every other (renderer.reuse.delta). `streamed`: the
    paths the write stage wrote already (their folders are WrittenFolders)."""
    planned, current = rendering.planned, rendering.current
    done = incremental.finish(rendering.begun, rendered)
    part = planned.part
    if part is not None:
        done = replace(done, files=part.merged(done.files, rendering.whole))
    cache = rendering.begun.cache
    if stamp is not None and part is not None and cache is not None:
        where = planned.where
        done = widened(done, stamp, cache, part, where.repo.work / where.subdir)
    # compared now, before the rest is written: `current` read each file before it was replaced
    return Rendition(done, current, changes(current, done.files, streamed))


def write(
    rendering: Rendering, stamp: Stamp | None = None, *, commit: bool = False
) -> tuple[Rendition, Written]:
    """The write stage, taking the render's chunks as they are rendered: each rendered folder
    is written as it arrives, while the rest render, and then let go (its Result keeps its
    names: renderer.output.tree.WrittenFolder); then the rest of the tree. Only files whose
    bytes change are written, none holding a credential; the render cache learns the Stats of
    what was written. `stamp`: see finish. With `commit` (a commit follows), a render of
    STREAM_BLOBS ModelDeployments or more sends each file's bytes to git as it is written
    (renderer.git.bulk.BlobSink), for the commit to name."""
    planned = rendering.planned
    where, current = planned.where, rendering.current
    many = commit and len(rendering.begun.stale) >= STREAM_BLOBS
    sink = BlobSink(where.repo) if many else None
    try:
        with tree_writer(where.repo, where.subdir, sink) as writer:
            root = where.repo.work / where.subdir
            rendered = _write_folders(writer, current, rendering.begun.chunks, root)
            rendition = finish(rendering, rendered, stamp, frozenset(writer.written))
            done = rendition.done
            refuse_credentials(done.files, current)
            write_tree(writer, done.files, current, done.files.unchanged)
        blobs = sink.close() if sink is not None else None
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    known: Mapping[str, Stat] = writer.stats
    if isinstance(current, DiskTree):  # as scanned, where not written since
        known = ChainMap(writer.stats, current.stats)  # type: ignore[arg-type]
    done.cache.record_stats(where.repo.work / where.subdir, known, done.files)
    planned.read.parsed.finish(where.store.sources)  # the repository exists now
    return rendition, Written(tuple(writer.written), blobs)


def _write_folders(
    writer: TreeWriter, current: Mapping[str, str], chunks: Iterator[list[Result]], root: Path
) -> list[Result]:
    """Every chunk's Results, the folders of rendered ModelDeployments written as they arrive
    (only files whose bytes change), each Result then holding its folder as written (`root`:
    the output folder), not its texts. Only folders rendering found free of credentials are
    written here; everything else waits for the tree. Each file replaced is read first, so
    `current` keeps the tree as it was (what the report and the rest of the write compare
    against)."""
    rendered: list[Result] = []
    for chunk in chunks:
        for result in chunk:
            if result.error is not None or not result.scanned:
                rendered.append(result)
                continue
            files = [(f"{result.key}/{name}", text) for name, text in result.files.items()]
            writer.check(path for path, _ in files)
            for path, text in files:
                if path not in current or current[path] != text:
                    writer.write(path, text)
            names, digest = sorted(result.files), folder_digest(result.files)
            rendered.append(replace(result, files=WrittenFolder(root, result.key, names, digest)))
    return rendered


def commit(
    planned: Plan, written: Written, rendition: Rendition, clean: bool, trailers: str = ""
) -> str | None:
    """The commit of the output folder, if anything changed since HEAD. `clean`: git found
    the folder as the render cache saw it, so only the paths written need staging."""
    where = planned.where
    touched = written.touched if clean else None
    texts = rendition.done.files.written
    count = len(written.touched)
    streamed = (written.blobs, written.touched) if written.blobs is not None else None
    return commits.commit(
        where.repo, where.subdir, count, texts, touched, trailers=trailers, streamed=streamed
    )


def keep(planned: Plan, rendition: Rendition, tree: str | None) -> None:
    """After a render that committed (HEAD holding `tree` at the output folder, else None):
    its stamp, when the next render would reuse every object (else none, and an old one
    goes)."""
    where, done = planned.where, rendition.done
    if tree is None or not done.stable:
        where.stamp.unlink(missing_ok=True)
        return
    Stamp.of(
        planned.read.parsed.fingerprint,
        planned.inputs.stamp,
        tree,
        done.results,
        done.removals,
        frame=planned.inputs.frame,
        sources=planned.read.rows,
    ).save(where.stamp)


def save_cache(planned: Plan, rendition: Rendition, tree: str | None) -> None:
    """The render cache, saved once at the end (also when Git failed after the tree was
    written), with HEAD's tree at the output folder (None: not known)."""
    rendition.done.cache.tree = tree
    rendition.done.cache.save(planned.where.cache)


def report(
    rendition: Rendition, committed: str | None, skipped: Sequence[str], *, check: bool
) -> RenderReport:
    """What the render did; with `check`, the tree rendered in memory too."""
    done = rendition.done
    reused = len(done.results) - done.rendered
    tree = done.files if check else None
    return RenderReport(
        done.results,
        rendition.changes,
        done.removals,
        reused,
        committed,
        tree,
        skipped,
        done.unchanged,
    )


def refuse_credentials(files: Tree, current: Mapping[str, str]) -> None:
    """The last guard before Git: no file about to be written may hold a credential. Rendering
    scans every file of a ModelDeployment and refuses the object (files.scanned); this scans
    every other file to be written."""
    for path in files:
        if path in files.unchanged or path in files.scanned:
            continue
        text = files[path]
        if current.get(path) != text:
            kind = credential_kind(text)
            if kind is not None:
                raise RunwayError(
                    f"{path}: looks like {kind}; refusing to write it into Git (use a Secret)"
                )


def changes(
    before: Mapping[str, str], after: Tree, streamed: Set[str] = frozenset()
) -> dict[str, list[str]]:
    """The paths added, changed and removed, each sorted. `streamed`: paths written already,
    each because its bytes changed (the tree holds them as on disk now)."""
    both = set(after) & set(before)
    return {
        "added": sorted(set(after) - set(before)),
        "changed": sorted(
            p for p in both if (p in streamed if p in after.unchanged else after[p] != before[p])
        ),
        "removed": sorted(set(before) - set(after)),
    }
