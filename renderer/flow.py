"""The render, one entry point: render(settings) -> RenderReport.

First the stamp (renderer.reuse.stamp) is asked whether a render would change nothing; then
the recorded report is the answer, and the render only pushes. Otherwise the render goes by
stages, each a function of typed values: plan (renderer.plan: the sources and the provider
configs read, what the output depends on), render (renderer.stages: the ModelDeployments whose
inputs changed, in memory), and with `check` the answer from memory; otherwise, under the
repository's lock, write (only the files whose bytes change), commit and push. A push rejected
as not a fast-forward restarts from the plan against the remote's head (renderer.git.push):
a bounded loop here, at most PUSH_ATTEMPTS pushes. `runway render` prints the report and maps
it to an exit status. A Git failure, another render holding the repository, or a link in the
tree raises GitError.

The renderers, the schemas and the registry's CEL are imported by the stages, only when a
render is done: a render that changes nothing never needs them (importing them took a third of
its time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from core.fields.errors import SourceError
from kubeio.sources import STDIN
from renderer.git.locks import leftovers, locked, recover
from renderer.git.provenance import Provenance, command_of, of_sources, rendered_from, same_sources
from renderer.git.push import PUSH_ATTEMPTS, Pushed, RetryTree, StillRejected, follow, push_once
from renderer.git.runner import GitError, Repo
from renderer.git.safefs import UnsafePath
from renderer.reuse.cleantree import CleanCheck
from renderer.reuse.digests import files_digest, runway_fingerprint
from renderer.reuse.sourcekeys import SourceKeys
from renderer.reuse.stamp import (
    Stamp,
    file_keys,
    head_tree,
    stamp_frame,
    stamp_inputs,
    stamped_settings,
)
from renderer.reuse.store import Store, cache_name
from renderer.settings import (
    Asked,
    ClusterCrds,
    PushedTo,
    RenderReport,
    RenderSettings,
    SourceCommits,
    Target,
    checked_path,
)

if TYPE_CHECKING:
    from renderer.plan import Plan
    from renderer.stages import Rendering, Rendition

Progress = Callable[[int, int], None]


def render(
    settings: RenderSettings,
    *,
    cluster_crds: ClusterCrds | None = None,
    progress: Progress | None = None,
) -> RenderReport:
    """One render (see the module's text). `cluster_crds` reads the cluster's CRDs (needed with
    `settings.crds_from_cluster`); `progress` is told (rendered so far, to render) as each pass
    renders the ModelDeployments whose inputs changed (never when none did)."""
    # The settings split, once, into what the render reads and where it writes: each stage is
    # handed the half it needs, never the settings.
    asked = Asked(
        settings.sources,
        settings.providers,
        settings.crds,
        settings.crds_from_cluster,
        settings.kubeconfig,
        settings.gateway,
        settings.full,
        settings.max_removals,
        settings.shard,
        settings.recursive,
    )
    target = Target(
        settings.repo,
        settings.path,
        settings.author,
        settings.check,
        settings.commit,
        settings.push,
        settings.branch,
    )
    try:
        delta, keys, looked = None, None, None
        if not (target.check or asked.full or asked.crds_from_cluster):
            # the source files, keyed by their Stats: once for the stamp and the plan
            keys = SourceKeys.within(Store(Path(target.repo).resolve() / ".git").sources)
            found = _stamped(asked, target, keys)
            if isinstance(found, RenderReport):
                return found
            if found is not None:  # git looked at the output folder already
                delta, looked = found
        if delta is not None and looked is None:
            # git looks at the output folder while the renderers are imported
            looked = _look(target)
        target = replace(target, provenance=_provenance(settings))
        return as_usual(
            asked, target, cluster_crds, progress, stamp=delta, looked=looked, keys=keys
        )
    except UnsafePath as err:  # a link in the tree: the repository cannot be used as it is
        raise GitError(str(err)) from None


def as_usual(
    asked: Asked,
    target: Target,
    cluster_crds: ClusterCrds | None,
    progress: Progress | None,
    *,
    stamp: Stamp | None = None,
    looked: CleanCheck | None = None,
    keys: SourceKeys | None = None,
) -> RenderReport:
    """A render as usual. In a repository that exists, the render holds it from the start, and
    git looks at the output folder while the sources are read (renderer.reuse.cleantree).
    `stamp`: the last render's, when only the bytes of some source files differ from its inputs
    (then only their namespaces may be rendered: renderer.reuse.delta). `looked`: git asked
    already. `keys`: the source files keyed already (renderer.reuse.sourcekeys)."""
    from renderer import plan as planning  # noqa: PLC0415 - the renderers: see the module's text
    from renderer import stages  # noqa: PLC0415

    if target.check or not (Path(target.repo) / ".git").is_dir():
        planned = planning.plan(asked, target, cluster_crds, progress)
        if target.check:
            rendition = stages.render(planned, stages.load_cache(planned))
            report = stages.report(rendition, None, planned.read.skipped, check=True)
            return replace(report, source=_source_commits(target, planned.where.repo))
        with locked(planned.where.repo):
            recover(planned.where.repo, planned.where.subdir)
            rendering = stages.begin(planned, stages.load_cache(planned))
            return _publish(asked, target, cluster_crds, rendering, clean=False)
    repo = Repo.open_or_init(target.repo, author=target.author)
    subdir = checked_path(target.path)
    with locked(repo):
        recover(repo, subdir)
        cached = not asked.full and Store(repo.git_dir).render_cache(
            cache_name(target.path, asked.shard)
        )
        check = (looked or CleanCheck(repo, subdir)) if cached and cached.is_file() else None
        kept = stamp if check is not None else None
        planned = planning.plan(
            asked, target, cluster_crds, progress, opened=repo, stamp=kept, keys=keys
        )
        cache = stages.load_cache(planned)
        part = planned.read.delta
        clean = check.tree(cache, part) if check is not None else None
        if part is not None and (
            kept is None or clean is None or cache is None or cache.tree != kept.tree
        ):  # git does not vouch for the tree as the stamp's: every document is read
            planned = planning.plan(asked, target, cluster_crds, progress, opened=repo, keys=keys)
            part = None
            clean = check.tree(cache) if check is not None else None
        if part is not None and kept is not None:  # only the changed files' namespaces
            planned = planning.narrowed(planned, part, kept)
        rendering = stages.begin(planned, cache, clean)
        widen = kept if part is not None else None
        return _publish(asked, target, cluster_crds, rendering, widen, clean=clean is not None)


def _publish(
    asked: Asked,
    target: Target,
    cluster_crds: ClusterCrds | None,
    rendering: Rendering,
    widen: Stamp | None = None,
    *,
    clean: bool,
) -> RenderReport:
    """Under the lock, recovered: write (taking the rendered folders as they are rendered),
    commit, push; after a rejected push, plan, render and write again on the remote's head (at
    most PUSH_ATTEMPTS pushes). The render cache is saved once, at the end (also when Git
    fails after the tree was written). `widen`: the stamp a render of some namespaces takes
    the rest from."""
    from renderer import stages  # noqa: PLC0415 - imported by as_usual already

    rendition, written = stages.write(rendering, widen, commit=bool(target.commit or target.push))
    planned = rendering.planned
    repo, subdir = planned.where.repo, planned.where.subdir
    tree = None  # HEAD's tree at `subdir` after the commit: the render cache's `tree`
    pushed = None
    try:
        committed, follows = None, True  # follows: HEAD is what was committed (and pushed)
        trailers = target.provenance.trailers() if target.provenance is not None else ""
        if target.commit or target.push:
            committed = stages.commit(planned, written, rendition, clean, trailers)
        if target.push:
            source, made = "HEAD", None
            for attempt in range(1, PUSH_ATTEMPTS + 1):
                answer = push_once(repo, target.push, target.branch, source, attempt)
                if isinstance(answer, Pushed):
                    follows = made is None or follow(repo, made, subdir)
                    break
                with RetryTree(repo, subdir, answer.base) as retry:
                    again = _again(asked, target, cluster_crds, planned, rendition)
                    rendition, written = stages.write(again)
                    planned = again.planned
                    made = source = retry.commit(written.touched, trailers)
            else:
                raise StillRejected(target.push, target.branch)
            committed = made or committed  # the commit the remote holds, when a retry made it
            pushed = _pushed_to(repo, target, made)
        if (target.commit or target.push) and follows:
            tree = head_tree(repo, subdir)
        stages.keep(planned, rendition, tree)
    finally:
        stages.save_cache(planned, rendition, tree)
    report = stages.report(rendition, committed, planned.read.skipped, check=False)
    return replace(report, pushed=pushed)


def _pushed_to(repo: Repo, target: Target, made: str | None) -> PushedTo:
    """What a push that succeeded left on the remote (`made`, a retry's commit, else HEAD), and
    the local branch it was pushed from."""
    local = repo.git("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    commit = made or repo.git("rev-parse", "HEAD").stdout.strip()
    return PushedTo(target.push or "", target.branch, commit, local or None)


def _again(
    asked: Asked,
    target: Target,
    cluster_crds: ClusterCrds | None,
    planned: Plan,
    rendition: Rendition,
) -> Rendering:
    """The plan and the render on the tree now on disk (the remote's head): a plan of some
    namespaces becomes the whole; the last pass's cache is reused (none with --full)."""
    from renderer import plan as planning  # noqa: PLC0415 - imported by as_usual already
    from renderer import stages  # noqa: PLC0415

    if planned.read.delta is not None:
        planned = planning.plan(
            asked, target, cluster_crds, planned.progress, opened=planned.where.repo
        )
    return stages.begin(planned, None if planned.full else rendition.done.cache)


def _stamped(
    asked: Asked, target: Target, keys: SourceKeys
) -> RenderReport | tuple[Stamp | None, CleanCheck] | None:
    """The report of a render that would change nothing, when the stamp shows it; else what
    git found of the output folder (renderer.reuse.cleantree, asked while the sources were
    keyed), with the stamp when only the bytes of some source files differ from it
    (renderer.reuse.delta); None: render as usual. Pushes, as a render does; when the push is
    rejected, the render as usual starts from the remote's head."""
    subdir = checked_path(target.path)
    work = Path(target.repo).resolve()
    if not (work / ".git").is_dir():
        return None
    store = Store(work / ".git")
    path = store.stamp(cache_name(target.path, asked.shard))
    if not path.is_file():
        return None
    repo = Repo(work, target.author)  # commits nothing: no identity needed
    with locked(repo):
        if leftovers(repo):  # of a killed render: the render as usual recovers them
            return None
        looked = CleanCheck(repo, subdir, held=True)  # git looks at the tree while Runway reads
        try:
            read = _inputs(asked, target, keys)
            # Another setting or set of files: a render as usual (the report is not even read).
            stamp = Stamp.load(path, *read) if read is not None else None
            if stamp is None or read is None:
                return None, looked
            if stamp.inputs != read[0]:
                return stamp, looked
            same = stamp.fingerprint == runway_fingerprint(store.fingerprint)
            results = stamp.results(repo.work / subdir)
        finally:
            looked.settle()  # git done before the repository is let go
        if not (same and looked.clean_tree() == stamp.tree):
            return None, looked
        pushed = None
        if target.push:
            answer = push_once(repo, target.push, target.branch)
            if not isinstance(answer, Pushed):
                with RetryTree(repo, subdir, answer.base):  # the output folder: the remote's
                    return None  # render against it
            pushed = _pushed_to(repo, target, None)
    changes: dict[str, Sequence[str]] = {"added": [], "changed": [], "removed": []}
    unchanged = sum(1 for r in results if r.error is None)
    return RenderReport(
        results, changes, stamp.removals, len(results), None, unchanged=unchanged, pushed=pushed
    )


def _source_commits(target: Target, repo: Repo) -> SourceCommits | None:
    """--check: the sources' commit now against the one the tree was rendered from."""
    said = target.provenance
    if said is None:
        return None
    subdir = checked_path(target.path)
    rendered = rendered_from(repo, subdir)
    differs = None not in (said.commit, rendered) and not same_sources(
        said, rendered or "", repo.work / subdir
    )
    return SourceCommits(said.commit, said.dirty, rendered, differs)


def _provenance(settings: RenderSettings) -> Provenance:
    """Where this render comes from (renderer.git.provenance): its sources' repository and
    commit, and the command."""
    output = Path(settings.repo) / checked_path(settings.path)
    return of_sources(settings.sources, command_of(settings.command), output)


def _look(target: Target) -> CleanCheck | None:
    """Git asked now whether the output folder is as the render cache saw it; None when a
    killed render left something for the render to recover first."""
    repo = Repo(Path(target.repo).resolve(), target.author)
    return None if leftovers(repo) else CleanCheck(repo, checked_path(target.path))


def _inputs(asked: Asked, target: Target, keys: SourceKeys) -> tuple[str, str] | None:
    """The stamp's digest of the inputs, and of them but the sources' bytes (renderer.reuse.stamp);
    None when a file cannot be read (the render as usual says why)."""
    try:
        sources = file_keys(asked.sources, keys, recursive=asked.recursive)
        providers = []
        if asked.providers and STDIN not in asked.providers:
            providers = [key for _, key in file_keys(asked.providers, keys)]
        schemas = files_digest([Path(d) for d in asked.crds]) if asked.crds else None
    except (OSError, SourceError):
        return None
    stamped = stamped_settings(asked, target, schemas)
    read = [key for _, key in sources] + providers
    frame = stamp_frame(stamped, [path for path, _ in sources], providers)
    return stamp_inputs(stamped, read), frame
