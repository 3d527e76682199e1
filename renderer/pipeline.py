"""The render pipeline, one entry point: sources -> render -> check -> write -> commit -> push.

`run_render(settings)` first asks the stamp (renderer.stamp) whether a render would change
nothing; then it answers with the recorded report, and only pushes. Otherwise it renders as
usual (renderer.job): reads the sources and the provider configs, renders the ModelDeployments
whose inputs changed (renderer.incremental), and with `check` answers from memory; otherwise,
under the repository's lock, writes only the files whose bytes change, commits and pushes
(re-rendering after a rejected push). It returns a RenderReport; `runway render` prints it and
maps it to an exit status. A Git failure, another render holding the repository, or a link in
the tree raises GitError.

The renderers, the schemas and the registry's CEL are imported by renderer.job, only when a
render is done: a render that changes nothing never needs them (importing them took a third of
its time).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

from core.fields.errors import SourceError
from kubeio.sources import STDIN
from renderer.cleantree import CleanCheck
from renderer.digests import FINGERPRINT, files_digest, runway_fingerprint
from renderer.git.gitops import Repo
from renderer.git.runner import GitError
from renderer.git.safefs import UnsafePath
from renderer.settings import ClusterCrds, RenderReport, RenderSettings, checked_path
from renderer.stamp import (
    Stamp,
    file_keys,
    stamp_frame,
    stamp_inputs,
    stamp_path,
    stamped_settings,
    tree_if_clean,
)


def run_render(
    settings: RenderSettings,
    *,
    cluster_crds: ClusterCrds | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RenderReport:
    """One render (see the module's text). `cluster_crds` reads the cluster's CRDs (needed with
    `settings.crds_from_cluster`); `progress` is told (rendered so far, to render) as each pass
    renders the ModelDeployments whose inputs changed (never when none did)."""
    try:
        delta = None
        if not (settings.check or settings.full or settings.crds_from_cluster):
            found = _stamped(settings)
            if isinstance(found, RenderReport):
                return found
            delta = found
        # git looks at the output folder while the renderers are imported (renderer.cleantree)
        check = _look(settings) if delta is not None else None
        job = importlib.import_module("renderer.job")
        report: RenderReport = job.render(settings, cluster_crds, progress, delta, check)
        return report
    except UnsafePath as err:  # a link in the tree: the repository cannot be used as it is
        raise GitError(str(err)) from None


def _stamped(settings: RenderSettings) -> RenderReport | Stamp | None:
    """The report of a render that would change nothing, when the stamp shows it; the stamp,
    when only the bytes of some source files differ from it (renderer.delta); None: render as
    usual. Pushes, as a render does; when the push is rejected, the render as usual starts
    from the remote's head."""
    subdir = checked_path(settings.path)
    work = Path(settings.repo).resolve()
    if not (work / ".git").is_dir():
        return None
    path = stamp_path(work / ".git", settings)
    if not path.is_file():
        return None
    read = _inputs(settings)
    # Another setting or set of files: a render as usual (the stamp's report is not even read).
    stamp = Stamp.load(path, *read) if read is not None else None
    if stamp is None or read is None:
        return None
    if stamp.inputs != read[0]:
        return stamp
    repo = Repo(work, settings.author)  # commits nothing: no identity needed
    try:
        with repo.locked():
            if repo.leftovers():  # of a killed render: the render as usual recovers them
                return None
            tree = tree_if_clean(repo, subdir)  # git looks at the tree while Runway reads
            try:
                same = stamp.fingerprint == runway_fingerprint(repo.git_dir / FINGERPRINT)
                results = stamp.results(repo.work / subdir)
            finally:
                clean = tree() == stamp.tree
            if not (same and clean):
                return None
            if settings.push:
                repo.push(settings.push, settings.branch, subdir, rerender=_moved)
    except _Moved:  # the output folder is the remote's now: render against it
        return None
    changes: dict[str, Sequence[str]] = {"added": [], "changed": [], "removed": []}
    return RenderReport(results, changes, stamp.removals, len(results), None)


def _look(settings: RenderSettings) -> CleanCheck | None:
    """Git asked now whether the output folder is as the render cache saw it; None when a
    killed render left something for the render to recover first."""
    repo = Repo(Path(settings.repo).resolve(), settings.author)
    return None if repo.leftovers() else CleanCheck(repo, checked_path(settings.path))


def _inputs(settings: RenderSettings) -> tuple[str, str] | None:
    """The stamp's digest of the inputs, and of them but the sources' bytes (renderer.stamp);
    None when a file cannot be read (the render as usual says why)."""
    try:
        sources = file_keys(settings.sources)
        providers = []
        if settings.providers and STDIN not in settings.providers:
            providers = [key for _, key in file_keys(settings.providers)]
        schemas = files_digest([Path(d) for d in settings.crds]) if settings.crds else None
    except (OSError, SourceError):
        return None
    stamped = stamped_settings(settings, schemas)
    keys = [key for _, key in sources] + providers
    frame = stamp_frame(stamped, [path for path, _ in sources], providers)
    return stamp_inputs(stamped, keys), frame


class _Moved(Exception):
    """The push was rejected, and the output folder holds the remote head's tree."""


def _moved() -> list[str]:
    raise _Moved
