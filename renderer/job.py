"""A render as usual, the part of renderer.pipeline that renders: read the sources and the
provider configs, render the ModelDeployments whose inputs changed (renderer.incremental), and
with `check` answer from memory; otherwise, under the repository's lock, write only the files
whose bytes change, commit and push (re-rendering after a rejected push), and leave the stamp
(renderer.stamp) the next render may answer from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.checks.credentials import credential_kind
from core.fields.errors import RunwayError, SourceError
from core.model.kinds import INFERENCE_PROVIDER_CONFIG, MODEL_DEPLOYMENT
from core.model.versions import Versions
from core.rendering.inferencegateway import GatewayTarget
from kubeio.policy import enforce
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.sources import STDIN, Document, expand_lists, read_documents, runway_documents
from renderer.cleantree import CleanCheck
from renderer.delta import failures_elsewhere, part_to_render, source_rows, widened
from renderer.digests import (
    FINGERPRINT,
    builtin_schemas_version,
    canonical,
    digest,
    files_digest,
    inputs_digest,
    runway_fingerprint,
)
from renderer.folders import Result
from renderer.git.disk import DiskTree
from renderer.git.gitops import Repo
from renderer.git.writer import TreeWriter
from renderer.incremental import Rendered, render_incremental
from renderer.ownership import (
    Ownership,
    another_file,
    claims,
    duplicates,
    origins_of,
    output_key,
    read_record,
    roots_of,
)
from renderer.parsecache import ParsedSources, cached
from renderer.pool import cores
from renderer.render import RenderContext
from renderer.rendercache import RenderCache
from renderer.schemapack import load_pack
from renderer.settings import ClusterCrds, RenderReport, RenderSettings, cache_key, checked_path
from renderer.shard import Namespaces, Part
from renderer.stamp import (
    Source,
    Stamp,
    head_tree,
    named_schemas,
    stamp_frame,
    stamp_inputs,
    stamp_path,
    stamped_settings,
)
from renderer.strict import Schemas
from renderer.tree import Tree

SOURCES_CACHE = "runway-sources"  # in .git: parsed source files, by content


@dataclass(frozen=True, slots=True)
class _Job:
    """A render, prepared: its inputs read, its repository open."""

    settings: RenderSettings
    repo: Repo
    subdir: str
    parsed: ParsedSources
    objects: list[dict[str, Any]]
    shared: str  # inputs_digest of every input besides the objects
    ownership: Ownership
    context: Callable[[], RenderContext]
    cache_path: Path
    progress: Callable[[int, int], None] | None
    stamp_inputs: str  # renderer.stamp
    stamp_frame: str
    sources: list[Source]  # the stamp's rows of the source files
    docs: list[Document]  # of `objects`, with each one's output_key in `keys`
    keys: list[str | None]
    part: Part | None  # the namespaces rendered (a shard's; renderer.delta's), None: all
    # renderer.delta: the namespaces the changed source files render into, whose documents
    # (and only theirs) `docs` holds; None: `docs` holds every document
    delta: Namespaces | None = None
    skipped: tuple[str, ...] = ()  # kubeio.sources.skip_note of each document of another group


def render(
    settings: RenderSettings,
    cluster_crds: ClusterCrds | None,
    progress: Callable[[int, int], None] | None,
    stamp: Stamp | None = None,
    looked: CleanCheck | None = None,
) -> RenderReport:
    """A render as usual (renderer.pipeline has the whole story). In a repository that exists,
    the render holds it from the start, and git looks at the output folder while the sources
    are read (renderer.cleantree). `stamp`: the last render's, when only the bytes of some
    source files differ from its inputs (then only their namespaces may be rendered:
    renderer.delta). `looked`: git asked already (renderer.cleantree)."""
    if settings.check or not (Path(settings.repo) / ".git").is_dir():
        job = _prepare(settings, cluster_crds, progress)
        if settings.check:
            done, current = _render(job, _cache(job))
            return _report(done, current, committed=None, skipped=job.skipped)
        with job.repo.locked():
            job.repo.recover(job.subdir)
            return _write(job, None)
    repo = Repo.open_or_init(settings.repo, author=settings.author)
    subdir = checked_path(settings.path)
    with repo.locked():
        repo.recover(subdir)
        cached = not settings.full and _cache_path(repo, settings).is_file()
        check = (looked or CleanCheck(repo, subdir)) if cached else None
        job = _prepare(settings, cluster_crds, progress, repo, stamp if cached else None)
        return _write(job, check, stamp, lambda: _prepare(settings, cluster_crds, progress, repo))


def _prepare(
    settings: RenderSettings,
    cluster_crds: ClusterCrds | None,
    progress: Callable[[int, int], None] | None,
    opened: Repo | None = None,
    stamp: Stamp | None = None,
) -> _Job:
    """The render, its inputs read; with `stamp`, when only the bytes of some source files
    differ from its inputs, only the documents of their namespaces are (renderer.delta)."""
    git_dir = Path(settings.repo) / ".git"
    fingerprint = runway_fingerprint(git_dir / FINGERPRINT if git_dir.is_dir() else None)
    parsed = ParsedSources(git_dir / SOURCES_CACHE if git_dir.is_dir() else None, fingerprint)
    files = parsed.files(settings.sources)
    documents = functools.cache(parsed.documents)  # each file parsed (or unpickled) once
    read = len(parsed.read_keys)  # the source files' (the provider-config files' come next)
    found = None
    if stamp is not None:
        found = part_to_render(stamp, files, documents, fingerprint, settings.shard)
    if found is not None and any(d.obj.get("kind") == MODEL_DEPLOYMENT for d in found[1]):
        delta, docs, taken = found
        docs, skipped = _checked(docs, settings.sources, whole=False)
    else:
        parsed.prefetch(files, cores())  # in a pool, when worth one
        delta, docs = None, [d for f in files for d in expand_lists(documents(f))]
        docs, skipped = _checked(docs, settings.sources, whole=True)
        taken = {str(f.path) for f in files}
    enforce(docs)  # the source repository's policy (kubeio.policy): exit 2 naming each
    configs = _config_objects(docs, settings.providers, parsed)
    keys = [output_key(d.obj) for d in docs]  # each document's folder, worked out once
    sources = source_rows(files, docs, keys, stamp, taken)
    if settings.shard is not None:  # a document without a folder (a config) goes to every shard
        shard = settings.shard
        kept = [(d, k) for d, k in zip(docs, keys, strict=True) if k is None or shard.owns_key(k)]
        docs, keys = [d for d, _ in kept], [k for _, k in kept]
    registry = build_registry(configs)
    pins = bundled_versions()
    schema_digest, load_schemas = _schema_source(settings, cluster_crds)
    shared = _shared_inputs(fingerprint, configs, schema_digest, pins, settings.gateway)
    subdir = checked_path(settings.path)
    repo = opened or Repo.open_or_init(settings.repo, author=settings.author)
    ownership = Ownership(
        origins_of(docs, repo.work, keys),
        roots_of(settings.sources, repo.work),
        duplicates(docs, keys),
        settings.max_removals,
    )
    schema_key = digest(fingerprint, schema_digest)[:16]
    stamped = stamped_settings(settings, named_schemas(settings, schema_digest))

    def context() -> RenderContext:
        # Parsed upstream schemas, kept per content: parsing the CRDs is most of a small render.
        for stale in repo.git_dir.glob("runway-schemas-*.pickle"):
            if stale.name != f"runway-schemas-{schema_key}.pickle":
                stale.unlink(missing_ok=True)
        schemas = cached(repo.git_dir / f"runway-schemas-{schema_key}.pickle", load_schemas)
        return RenderContext(registry, schemas, pins, settings.gateway)

    return _Job(
        settings,
        repo,
        subdir,
        parsed,
        [d.obj for d in docs],
        inputs_digest(shared),
        ownership,
        context,
        _cache_path(repo, settings),
        progress,
        stamp_inputs(stamped, parsed.read_keys),
        stamp_frame(stamped, parsed.read_paths[:read], parsed.read_keys[read:]),
        sources,
        docs,
        keys,
        settings.shard,
        delta,
        skipped,
    )


def _narrowed(job: _Job, part: Part, stamp: Stamp) -> _Job:
    """`job`, rendering only `part` (renderer.delta), with the stamp's failures elsewhere."""
    kept = [(d, k) for d, k in zip(job.docs, job.keys, strict=True) if k and part.owns_key(k)]
    docs, keys = [d for d, _ in kept], [k for _, k in kept]
    ownership = Ownership(
        origins_of(docs, job.repo.work, list(keys)),
        job.ownership.roots,
        duplicates(docs, keys),
        job.settings.max_removals,
        failures_elsewhere(stamp, part),
    )
    return replace(
        job,
        objects=[d.obj for d in docs],
        ownership=ownership,
        docs=docs,
        keys=list[str | None](keys),
        part=part,
    )


def _write(
    job: _Job,
    check: CleanCheck | None,
    stamp: Stamp | None = None,
    whole: Callable[[], _Job] | None = None,
) -> RenderReport:
    """Under the lock, recovered: render, write, commit, push; the render cache is saved once,
    at the end (also when Git fails after the tree was written). `check`: git asked whether the
    output folder is as the render cache saw it (renderer.cleantree); `stamp`: see render;
    `whole`: the job with every document read, for a job of some namespaces' whose tree git
    does not vouch for as the stamp's."""
    repo, subdir, settings = job.repo, job.subdir, job.settings
    cache = _cache(job)
    part = job.delta
    clean = check.tree(cache, part) if check is not None else None
    if part is not None and (
        stamp is None or clean is None or cache is None or cache.tree != stamp.tree
    ):
        if whole is None:
            raise ValueError("a job of some namespaces needs `whole`")
        job, part = whole(), None
        clean = check.tree(cache) if check is not None else None
    work = job if part is None or stamp is None else _narrowed(job, part, stamp)
    with repo.writer(subdir) as writer:
        done, current = _render(work, cache, writer, clean)
        if part is not None and stamp is not None and cache is not None:
            done = widened(done, stamp, cache, part, repo.work / subdir)
        changes = _changes(current, done.files)
        written = _store(work, done, current, writer)
    tree = None  # HEAD's tree at `subdir` after the commit: the render cache's `tree`
    try:
        job.parsed.finish(repo.git_dir / SOURCES_CACHE)
        committed, follows = None, True  # follows: HEAD is what was committed (and pushed)
        if settings.commit or settings.push:
            touched = writer.written if clean is not None else None
            committed = repo.commit(subdir, written, done.files.written, touched)
        if settings.push:

            def rerender() -> list[str]:
                nonlocal done, changes, job
                if job.delta is not None and whole is not None:  # the remote's head: everything
                    job = whole()
                with repo.writer(subdir) as again:
                    done, current = _render(job, None if settings.full else done.cache, again)
                    changes = _changes(current, done.files)
                    _store(job, done, current, again)
                    return list(again.written)

            pushed = repo.push(settings.push, settings.branch, subdir, rerender=rerender)
            committed = (
                pushed.made or committed
            )  # the commit the remote holds, when a retry made it
            follows = pushed.moved
        if (settings.commit or settings.push) and follows:
            tree = head_tree(repo, subdir)
        _record_stamp(job, done, tree)
    finally:
        done.cache.tree = tree
        done.cache.save(job.cache_path)
    reused = len(done.results) - done.rendered
    return RenderReport(
        done.results, changes, done.removals, reused, committed, skipped=job.skipped
    )


def _record_stamp(job: _Job, done: Rendered, tree: str | None) -> None:
    """After a render that committed (HEAD holding `tree` at the output folder): its stamp,
    when the next render would reuse every object (else none, and an old one goes)."""
    path = stamp_path(job.repo.git_dir, job.settings)
    if tree is None or not done.stable:
        path.unlink(missing_ok=True)
        return
    Stamp.of(
        job.parsed.fingerprint,
        job.stamp_inputs,
        tree,
        done.results,
        done.removals,
        frame=job.stamp_frame,
        sources=job.sources,
    ).save(path)


def _cache_path(repo: Repo, settings: RenderSettings) -> Path:
    return repo.git_dir / f"runway-render-cache-{cache_key(settings)}.pickle"


def _cache(job: _Job) -> RenderCache | None:
    return None if job.settings.full else RenderCache.load(job.cache_path)


def _render(
    job: _Job,
    cache: RenderCache | None,
    writer: TreeWriter | None = None,
    clean: DiskTree | None = None,
) -> tuple[Rendered, Mapping[str, str]]:
    """One pass against the tree on disk now (`clean`: as git vouched for it, else scanned);
    `cache` None renders everything (--full). A shard renders against its part of the tree,
    then writes the shared files whole (renderer.shard). With a `writer`, each rendered folder
    is written as it arrives, while the rest render."""
    whole = clean if clean is not None else job.repo.scan(job.subdir)
    shard = job.part
    current = whole if shard is None else shard.view(whole)
    ownership = job.ownership
    if ownership.roots and ownership.origins:  # a folder another file owns is refused
        another = another_file(job.repo.work, Path.cwd().resolve())
        taken = claims(ownership, read_record(whole), another)
        ownership = replace(ownership, refused={**ownership.refused, **taken})
    done = render_incremental(
        job.objects,
        current=current,
        cache=cache,
        shared=job.shared,
        context=job.context,
        digests=job.parsed.digests,
        stats=None if job.settings.full else current.stats,  # --full: compared by content
        ownership=ownership,
        progress=job.progress,
        ready=None if writer is None else functools.partial(_write_rendered, writer, current),
    )
    if shard is not None:
        done = replace(done, files=shard.merged(done.files, whole))
    return done, current


def _write_rendered(
    writer: TreeWriter, current: Mapping[str, str], results: Sequence[Result]
) -> None:
    """Write the folders of rendered ModelDeployments as they arrive (only files whose bytes
    change). Only folders rendering found free of credentials are written here; everything else
    waits for the tree. Each file replaced is read first, so `current` keeps the tree as it was
    (what the report and the rest of the write compare against)."""
    for result in results:
        if result.error is not None or not result.scanned:
            continue
        files = [(f"{result.key}/{name}", text) for name, text in result.files.items()]
        writer.check(path for path, _ in files)
        for path, text in files:
            if path not in current or current[path] != text:
                writer.write(path, text)


def _store(job: _Job, done: Rendered, current: Mapping[str, str], writer: TreeWriter) -> int:
    """Write the rest of the tree (only files whose bytes change) with the `writer` the render
    wrote its folders with; the count of files written or removed, by both."""
    _refuse_credentials(done.files, current)
    written = job.repo.write_tree(job.subdir, done.files, current, done.files.unchanged, writer)
    known = {**current.stats, **writer.stats} if isinstance(current, DiskTree) else writer.stats
    done.cache.record_stats(job.repo.work / job.subdir, known, done.files)
    return len(written)


def _report(
    done: Rendered, current: Mapping[str, str], *, committed: str | None, skipped: tuple[str, ...]
) -> RenderReport:
    changes = _changes(current, done.files)
    reused = len(done.results) - done.rendered
    return RenderReport(
        done.results, changes, done.removals, reused, committed, done.files, skipped
    )


def _checked(
    docs: list[Document], paths: Sequence[str], *, whole: bool
) -> tuple[list[Document], tuple[str, ...]]:
    """The documents of the sources of Runway's kinds, and a note for each of another API group
    (skipped), by the one rule of kinds every command follows (kubeio.sources.is_runway_kind:
    an unknown kind of Runway's groups is a SourceError); with `whole` (every document of every
    source), a ModelDeployment among them."""
    kinds = runway_documents(docs)
    docs = kinds.runway
    if whole and not any(d.obj.get("kind") == MODEL_DEPLOYMENT for d in docs):
        raise SourceError(", ".join(paths), "no ModelDeployment objects found")
    return docs, tuple(kinds.notes)


def _config_objects(
    docs: Sequence[Document], providers: Sequence[str], parsed: ParsedSources
) -> list[dict[str, Any]]:
    """The InferenceProviderConfigs in force: --providers, else the sources', else the shipped.
    Named files are read through `parsed`, as the sources are (renderer.stamp keys on them)."""
    if providers:
        docs = read_documents(providers) if STDIN in providers else parsed.read(providers)
        for doc in docs:
            if doc.obj.get("kind") != INFERENCE_PROVIDER_CONFIG:
                raise SourceError(doc.where, f"expected an InferenceProviderConfig, got {doc.kind}")
        return [d.obj for d in docs]
    configs = [d.obj for d in docs if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG]
    return configs or bundled_config_objects()


def _schema_source(
    settings: RenderSettings, cluster_crds: ClusterCrds | None
) -> tuple[str, Callable[[], Schemas]]:
    """The digest of the schemas in force, and how to parse them (only when something renders):
    the schema pack (part of Runway's fingerprint), overridden kind by kind by --crds or
    --crds-from-cluster."""
    if settings.crds_from_cluster:
        if cluster_crds is None:
            raise ValueError("crds_from_cluster needs cluster_crds, the reader of the cluster")
        crds = cluster_crds(settings.kubeconfig)
        return canonical(crds), lambda: Schemas.from_pack(load_pack()).overridden_by(
            Schemas.from_crds(crds)
        )
    if settings.crds:
        for directory in settings.crds:
            if not Path(directory).is_dir():
                raise SourceError(directory, "CRD directory does not exist")
        directories = list(settings.crds)
        return files_digest([Path(d) for d in directories]), lambda: Schemas.from_pack(
            load_pack()
        ).overridden_by(Schemas.from_directories(directories))
    return "schema pack", lambda: Schemas.from_pack(load_pack())


def _shared_inputs(
    fingerprint: str,
    configs: Sequence[Mapping[str, Any]],
    schemas: str,
    pins: Versions,
    gateway: GatewayTarget | None,
) -> dict[str, bytes | str]:
    """Everything rendering reads besides the object and its previous output, by name; an
    input missing here would let an incremental render keep stale output."""
    return {
        "runway": fingerprint,  # our version, code and data (incl. flag catalogs)
        "configs": canonical(list(configs)),
        "pins": repr(pins),
        "schemas": schemas,
        "builtin-schemas": builtin_schemas_version(),
        "gateway": repr(gateway),
    }


def _refuse_credentials(files: Tree, current: Mapping[str, str]) -> None:
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


def _changes(before: Mapping[str, str], after: Tree) -> dict[str, list[str]]:
    both = (set(after) & set(before)) - after.unchanged
    return {
        "added": sorted(set(after) - set(before)),
        "changed": sorted(p for p in both if after[p] != before[p]),
        "removed": sorted(set(before) - set(after)),
    }
