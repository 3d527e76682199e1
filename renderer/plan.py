"""The first stage of a render: what it is asked (Asked, Target) and its inputs turned into one
typed Plan.

plan() reads the sources (through the parsed-sources cache, renderer.reuse.parsecache) and the
provider configs, applies the source repository's policy, works out each document's output
folder, what the render's output depends on besides the objects (the shared inputs of
renderer.reuse.digests, the stamp's digests of renderer.reuse.stamp) and what the render owns
(renderer.output.ownership). Given the last render's stamp, when only the bytes of some source
files differ from it, only the documents of their namespaces are read (renderer.reuse.delta);
narrowed() then keeps the plan to them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.fields.errors import SourceError
from core.model.kinds import INFERENCE_PROVIDER_CONFIG, MODEL_DEPLOYMENT
from core.model.versions import Versions
from core.rendering.inferencegateway import GatewayTarget
from core.selection.configs import ProviderRegistry
from kubeio.policy import enforce
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.sources import STDIN, Document, expand_lists, read_documents, runway_documents
from renderer.git.runner import Repo
from renderer.output.ownership import Ownership, duplicates, origins_of, output_key, roots_of
from renderer.output.render import RenderContext
from renderer.output.schemapack import load_pack
from renderer.output.shard import Namespaces, Part
from renderer.output.strict import Schemas
from renderer.pool import cores
from renderer.reuse.delta import failures_elsewhere, part_to_render, source_rows
from renderer.reuse.digests import (
    builtin_schemas_version,
    canonical,
    digest,
    files_digest,
    inputs_digest,
    runway_fingerprint,
)
from renderer.reuse.parsecache import ParsedSources
from renderer.reuse.sourcekeys import SourceKeys
from renderer.reuse.stamp import Source, Stamp, named_schemas, stamp_frame, stamp_inputs
from renderer.reuse.stamp import stamped_settings as stamped_of
from renderer.reuse.store import Store, cache_name
from renderer.settings import Asked, ClusterCrds, Target, checked_path


@dataclass(frozen=True, slots=True)
class Where:
    """Where a render reads and writes: the repository, the output folder in it, and the
    caches' files (renderer.reuse.store)."""

    repo: Repo
    subdir: str
    store: Store
    cache: Path  # the render cache of this output folder (and shard)
    stamp: Path  # its stamp


@dataclass(frozen=True, slots=True)
class Read:
    """The sources as read: the documents of Runway's kinds (each with its output folder in
    `keys`, None for a document without one), the stamp's rows of the source files, and a
    note for each document of another API group (skipped)."""

    parsed: ParsedSources
    docs: list[Document]
    keys: list[str | None]
    rows: list[Source]
    skipped: tuple[str, ...]
    files: int  # the source files read (their keys come first in parsed.read_keys)
    # renderer.reuse.delta: the namespaces the changed source files render into, whose
    # documents (and only theirs) `docs` holds; None: `docs` holds every document
    delta: Namespaces | None = None

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [d.obj for d in self.docs]


@dataclass(frozen=True, slots=True)
class Context:
    """What every ModelDeployment renders with; called only when something renders (parsing
    the CRDs is most of a small render: the parsed schemas are kept per content in the
    store)."""

    registry: ProviderRegistry
    pins: Versions
    gateway: GatewayTarget | None
    store: Store
    schema_key: str
    load: Callable[[], Schemas]

    def __call__(self) -> RenderContext:
        self.store.drop_schemas_but(self.schema_key)
        schemas = self.store.cached(self.store.schemas(self.schema_key), self.load)
        return RenderContext(self.registry, schemas, self.pins, self.gateway)


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the output depends on besides the objects and the tree: `shared`, the digest of
    every shared input (renderer.reuse.digests.inputs_digest), and the stamp's digests."""

    shared: str
    context: Context
    stamp: str  # renderer.reuse.stamp.stamp_inputs
    frame: str  # renderer.reuse.stamp.stamp_frame


@dataclass(frozen=True, slots=True)
class Plan:
    """A render, planned: where, what was read, what the output depends on, what it owns,
    the namespaces rendered (a shard's, or the delta's; None: all)."""

    where: Where
    read: Read
    inputs: Inputs
    ownership: Ownership
    part: Part | None
    full: bool  # render every ModelDeployment, ignoring the render cache
    progress: Callable[[int, int], None] | None
    # each rendered folder's METADATA_FILE where its other files change (renderer.git.provenance);
    # "" (--check): each keeps the one on disk, a new folder has none (the render that writes
    # the folder says where it came from)
    metadata: str | None = None

    @property
    def objects(self) -> list[dict[str, Any]]:
        return self.read.objects


def _existing_repo(path: str) -> None:
    """--check (and --diff) write nothing, so a repository that is not there already is unusable
    input (a mistyped --repo), never a new one reported as all out of date. As open_or_init,
    a Git work tree is a folder with a .git folder in it."""
    why = "--check and --diff write nothing, and create no repository"
    if not Path(path).exists():
        raise SourceError(path, f"no such repository ({why})")
    if not (Path(path) / ".git").is_dir():
        raise SourceError(path, f"not a Git repository: no .git folder in it ({why})")


def plan(
    asked: Asked,
    target: Target,
    cluster_crds: ClusterCrds | None,
    progress: Callable[[int, int], None] | None,
    *,
    opened: Repo | None = None,
    stamp: Stamp | None = None,
    keys: SourceKeys | None = None,
) -> Plan:
    """The render, its inputs read; with `stamp`, when only the bytes of some source files
    differ from its inputs, only the documents of their namespaces are (renderer.reuse.delta).
    `opened`: the repository, when the caller holds it already; `keys`: the source files keyed
    already (renderer.reuse.sourcekeys)."""
    git_dir = Path(target.repo) / ".git"
    kept = Store(git_dir) if git_dir.is_dir() else None
    fingerprint = runway_fingerprint(kept.fingerprint if kept else None)
    folder = kept.sources if kept else None
    parsed = ParsedSources(folder, fingerprint, by_stat=not asked.full, keys=keys)
    read = _read(asked, parsed, stamp)
    configs = _config_objects(read.docs, asked.providers, parsed)
    schema_digest, load_schemas = _schema_source(asked, cluster_crds)
    pins = bundled_versions()
    shared = _shared_inputs(fingerprint, configs, schema_digest, pins, asked.gateway)
    subdir = checked_path(target.path)  # before the repository is made: --path may not do
    if target.check and opened is None:
        _existing_repo(target.repo)
    repo = opened or Repo.open_or_init(target.repo, author=target.author)
    store = Store(repo.git_dir)
    key = cache_name(target.path, asked.shard)
    where = Where(repo, subdir, store, store.render_cache(key), store.stamp(key))
    ownership = Ownership(
        origins_of(read.docs, repo.work, read.keys),
        roots_of(asked.sources, repo.work),
        duplicates(read.docs, read.keys),
        asked.max_removals,
        recursive=asked.recursive,
    )
    schema_key = digest(fingerprint, schema_digest)[:16]
    registry = build_registry(configs)
    context = Context(registry, pins, asked.gateway, store, schema_key, load_schemas)
    stamped = stamped_of(asked, target, named_schemas(asked, schema_digest))
    files = read.files  # the source files' keys come first, the provider-config files' next
    inputs = Inputs(
        inputs_digest(shared),
        context,
        stamp_inputs(stamped, parsed.read_keys),
        stamp_frame(stamped, parsed.read_paths[:files], parsed.read_keys[files:]),
    )
    said = target.provenance
    metadata = None if said is None else "" if target.check else said.metadata()
    return Plan(where, read, inputs, ownership, asked.shard, asked.full, progress, metadata)


def _read(asked: Asked, parsed: ParsedSources, stamp: Stamp | None) -> Read:
    """The source documents (of the changed files' namespaces only, when the stamp allows),
    checked against the policy, each with its output folder; a shard keeps its own."""
    files = parsed.files(asked.sources, recursive=asked.recursive)
    counted = len(parsed.read_keys)
    documents = functools.cache(parsed.documents)  # each file parsed (or unpickled) once
    found = None
    if stamp is not None:
        found = part_to_render(stamp, files, documents, parsed.fingerprint, asked.shard)
    if found is not None and any(d.obj.get("kind") == MODEL_DEPLOYMENT for d in found[1]):
        delta, docs, taken = found
        docs, skipped = _checked(docs, asked.sources, whole=False)
    else:
        parsed.prefetch(files, cores())  # in a pool, when worth one
        delta, docs = None, [d for f in files for d in expand_lists(documents(f))]
        docs, skipped = _checked(docs, asked.sources, whole=True)
        taken = {str(f.path) for f in files}
    enforce(docs)  # the source repository's policy (kubeio.policy): exit 2 naming each
    keys = [output_key(d.obj) for d in docs]  # each document's folder, worked out once
    rows = source_rows(files, docs, keys, stamp, taken)
    if asked.shard is not None:  # a document without a folder (a config) goes to every shard
        shard = asked.shard
        kept = [(d, k) for d, k in zip(docs, keys, strict=True) if k is None or shard.owns_key(k)]
        docs, keys = [d for d, _ in kept], [k for _, k in kept]
    return Read(parsed, docs, keys, rows, skipped, counted, delta)


def narrowed(planned: Plan, part: Part, stamp: Stamp) -> Plan:
    """`planned`, rendering only `part` (renderer.reuse.delta), with the stamp's failures
    elsewhere."""
    read, repo = planned.read, planned.where.repo
    kept = [(d, k) for d, k in zip(read.docs, read.keys, strict=True) if k and part.owns_key(k)]
    docs, keys = [d for d, _ in kept], [k for _, k in kept]
    ownership = Ownership(
        origins_of(docs, repo.work, list(keys)),
        planned.ownership.roots,
        duplicates(docs, keys),
        planned.ownership.max_removals,
        failures_elsewhere(stamp, part),
        planned.ownership.recursive,
    )
    narrow = replace(read, docs=docs, keys=list[str | None](keys))
    return replace(planned, read=narrow, ownership=ownership, part=part)


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
    Named files are read through `parsed`, as the sources are (renderer.reuse.stamp keys on
    them)."""
    if providers:
        docs = read_documents(providers) if STDIN in providers else parsed.read(providers)
        for doc in docs:
            if doc.obj.get("kind") != INFERENCE_PROVIDER_CONFIG:
                raise SourceError(doc.where, f"expected an InferenceProviderConfig, got {doc.kind}")
        return [d.obj for d in docs]
    configs = [d.obj for d in docs if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG]
    return configs or bundled_config_objects()


def _schema_source(
    asked: Asked, cluster_crds: ClusterCrds | None
) -> tuple[str, Callable[[], Schemas]]:
    """The digest of the schemas in force, and how to parse them (only when something renders):
    the schema pack (part of Runway's fingerprint), overridden kind by kind by --crds or
    --crds-from-cluster."""
    if asked.crds_from_cluster:
        if cluster_crds is None:
            raise ValueError("crds_from_cluster needs cluster_crds, the reader of the cluster")
        crds = cluster_crds(asked.kubeconfig)
        return canonical(crds), lambda: Schemas.from_pack(load_pack()).overridden_by(
            Schemas.from_crds(crds)
        )
    if asked.crds:
        for directory in asked.crds:
            if not Path(directory).is_dir():
                raise SourceError(directory, "CRD directory does not exist")
        directories = list(asked.crds)
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
