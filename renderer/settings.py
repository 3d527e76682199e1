"""What a render is asked (RenderSettings, as `runway render`'s flags give it) and what it answers
(RenderReport), apart from the render (renderer.flow) so that reading them imports no
renderer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.fields.errors import SourceError
from kubeio.sources import check_name
from renderer.git.provenance import Provenance
from renderer.git.runner import Identity
from renderer.git.safefs import UnsafePath, plain_parts
from renderer.output.folders import Result
from renderer.output.ownership import DEFAULT_MAX_REMOVALS, Removals
from renderer.output.shard import Shard
from renderer.output.tree import Tree

if TYPE_CHECKING:
    from core.rendering.inferencegateway import GatewayTarget

# Reads the CRDs a live cluster serves (renderer.apply.cluster_crds): handed in by the caller,
# so that a render without --crds-from-cluster never imports the kubernetes client.
ClusterCrds = Callable[[str | None], list[tuple[str, dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """One render, as `runway render` is asked for it (docs/rendering.md)."""

    sources: tuple[str, ...]  # files or directories of ModelDeployments (SOURCE...)
    repo: str  # the Git work tree, created if missing
    path: str = "rendered"  # the folder in the repository
    commit: bool = False
    push: str | None = None  # the remote to push to (implies commit)
    branch: str = "main"  # the branch to push
    check: bool = False  # render in memory and compare; write nothing
    providers: tuple[str, ...] = ()  # InferenceProviderConfigs (else the sources', else shipped)
    crds: tuple[str, ...] = ()  # CRD directories that override the schema pack kind by kind
    crds_from_cluster: bool = False  # the cluster's CRDs override the schema pack
    kubeconfig: str | None = None  # for crds_from_cluster
    gateway: GatewayTarget | None = None  # the Gateway HTTPRoutes attach to (and --istio)
    full: bool = False  # render every ModelDeployment, ignoring the render cache
    max_removals: int = DEFAULT_MAX_REMOVALS
    author: Identity | None = None  # the commits' author (default: the repository's user)
    shard: Shard | None = None  # render only this shard's namespaces (renderer.output.shard)
    # the command's arguments, as given (recorded, redacted, by renderer.git.provenance)
    command: tuple[str, ...] = ()
    # the sources' folders with every folder under them (`runway render -R`), else their own
    # files only (kubeio.sources.yaml_files)
    recursive: bool = True


@dataclass(frozen=True, slots=True)
class Asked:
    """What a render reads and how it renders it: the half of RenderSettings the plan and the
    render stages read (renderer.flow splits the settings at its entry)."""

    sources: tuple[str, ...]
    providers: tuple[str, ...]
    crds: tuple[str, ...]
    crds_from_cluster: bool
    kubeconfig: str | None
    gateway: GatewayTarget | None
    full: bool
    max_removals: int
    shard: Shard | None
    recursive: bool = True  # the sources' folders with every folder under them


@dataclass(frozen=True, slots=True)
class Target:
    """Where a render writes and what becomes of the tree: the half of RenderSettings the
    write, commit and push stages read."""

    repo: str
    path: str
    author: Identity | None
    check: bool
    commit: bool
    push: str | None
    branch: str
    provenance: Provenance | None = None  # where the render came from (renderer.git.provenance)


@dataclass(frozen=True, slots=True)
class PushedTo:
    """A render's push: the commit `branch` of `remote` holds afterwards, and the local branch
    the render ran on (None: a detached HEAD), which may differ from `branch`."""

    remote: str
    branch: str
    commit: str
    local: str | None


@dataclass(frozen=True, slots=True)
class SourceCommits:
    """With --check: the commit the sources are at now (None: not all in one Git repository),
    whether they have uncommitted changes, and the source commit the output folder's last render
    commit names (None: none names one)."""

    current: str | None
    dirty: bool
    rendered: str | None
    # the tree was rendered from another source commit than the current one (both known; in
    # one repository with the output, commits that changed only the output folder do not count)
    differs: bool = False


@dataclass(frozen=True, slots=True)
class RenderReport:
    """What one render did: every object's result, the files changed, the removals."""

    results: Sequence[Result]
    changes: Mapping[str, Sequence[str]]  # "added", "changed", "removed" -> paths, sorted
    removals: Removals
    reused: int  # results taken from the last render (unchanged since)
    committed: str | None = None  # the commit made, if any
    # With `check`: the tree rendered in memory (path -> text) and, as its `current`, the tree
    # on disk, so that the caller can show what would change (`runway render --diff`).
    tree: Tree | None = None
    # kubeio.sources.skip_note of each source document of another API group, left out
    skipped: Sequence[str] = ()
    # the results taken from the last render that rendered: `reused` less its failures, which
    # are failed, not unchanged (`runway render`'s summary)
    unchanged: int = 0
    pushed: PushedTo | None = None  # with --push, what was pushed where
    source: SourceCommits | None = None  # with --check, the sources' commit against the tree's

    @property
    def failed(self) -> bool:
        """Some object was not rendered, or a removal was withheld."""
        return any(r.error is not None for r in self.results) or bool(self.removals.withheld)

    @property
    def out_of_date(self) -> bool:
        return any(self.changes.values())

    @property
    def schema_sources(self) -> dict[str, str]:
        """`apiVersion Kind` -> where its schema came from, for every kind the results checked."""
        return dict(sorted({k: v for r in self.results for k, v in r.schemas}.items()))


def checked_path(value: str) -> str:
    """--path: a plain folder inside the work tree, never .git or above it, named in UTF-8."""
    check_name(value)
    try:
        parts = plain_parts(value.strip("/") if not value.startswith("/") else "/")
    except UnsafePath:
        parts = []
    if not parts or ".git" in parts:
        raise SourceError("--path", f"expected a folder inside the repository, got {value!r}")
    return "/".join(parts)
