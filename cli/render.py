"""`runway render`: ModelDeployments in, a committed GitOps tree out."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from core.checks.credentials import credential_kind
from core.fields.errors import RunwayError, SourceError
from core.model.kinds import EXTERNAL_MODEL_PROVIDER, INFERENCE_PROVIDER_CONFIG, MODEL_DEPLOYMENT
from core.model.versions import Versions
from core.rendering.inferencegateway import GatewayTarget
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.sources import Document, read_documents
from renderer.gitops import GitError, Repo
from renderer.incremental import (
    RenderCache,
    Rendered,
    Tree,
    canonical,
    digest,
    files_digest,
    inputs_digest,
    render_incremental,
    runway_fingerprint,
)
from renderer.ownership import (
    DEFAULT_MAX_REMOVALS,
    Ownership,
    duplicates,
    origins_of,
    roots_of,
)
from renderer.parsecache import ParsedSources, cached
from renderer.render import Result
from renderer.safefs import UnsafePath, plain_parts
from renderer.schemapack import load_pack
from renderer.strict import Schemas

KINDS = (MODEL_DEPLOYMENT, INFERENCE_PROVIDER_CONFIG, EXTERNAL_MODEL_PROVIDER)
# `render --check` follows `kubectl diff`: 0 no differences, 1 differences, above 1 an error.
CHECK_OUT_OF_DATE = 1
CHECK_REJECTED = 3  # a ModelDeployment was not rendered (2 stays "unusable input", 4 "Git failed")
SOURCES_CACHE = "runway-sources"  # in .git: parsed source files, by content
EXIT_GIT = 4  # cli.main.Exit.UNAVAILABLE (not imported: cli.main imports this module)


def add_commands(commands: Any) -> None:
    render = commands.add_parser(
        "render",
        help="render ModelDeployments into a GitOps repository (upstream objects, strictly checked)",
        description="Exit status: 0 all rendered; 1 some ModelDeployment was not rendered (the rest "
        "were), or a file to be written looked like a credential; 2 unusable input; 4 Git failed or "
        "another render is running in the repository. With --check, as kubectl diff: 0 up to date; "
        "1 the tree is out of date; 3 some ModelDeployment was not rendered (out of date or not). "
        "Only ModelDeployments whose inputs changed are rendered again (--full renders all); only "
        "files whose bytes change are written.",
    )
    render.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="files or directories of ModelDeployments (and InferenceProviderConfigs)",
    )
    render.add_argument(
        "--repo", required=True, metavar="PATH", help="Git work tree (created if missing)"
    )
    render.add_argument(
        "--path",
        default="rendered",
        metavar="SUBDIR",
        help="folder in the repository (default: rendered)",
    )
    render.add_argument(
        "--commit",
        action="store_true",
        help="commit the rendered tree (skipped when nothing changed)",
    )
    render.add_argument(
        "--push",
        metavar="REMOTE",
        help="push the commit (implies --commit); retries after rejection, never forces",
    )
    render.add_argument("--branch", default="main", help="branch to push (default main)")
    render.add_argument(
        "--check",
        action="store_true",
        help="render in memory; exit 1 if the repository is out of date, 3 if an object is rejected",
    )
    render.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfigs (default: from the sources, else the shipped five)",
    )
    crds = render.add_mutually_exclusive_group()
    crds.add_argument(
        "--crds",
        action="append",
        metavar="DIR",
        help="upstream CRDs that replace Runway's schema pack for their kinds, repeatable "
        "(default: the schema pack alone)",
    )
    crds.add_argument(
        "--crds-from-cluster",
        action="store_true",
        help="the CRDs a live cluster serves (--kubeconfig) replace the schema pack for their kinds",
    )
    render.add_argument("--kubeconfig", metavar="FILE", help="for --crds-from-cluster")
    render.add_argument(
        "--gateway",
        metavar="NAMESPACE/NAME",
        help="the Gateway HTTPRoutes attach to (needed by spec.gateway.enabled: true)",
    )
    render.add_argument(
        "--istio",
        action="store_true",
        help="also render an Istio DestinationRule for each endpoint picker",
    )
    render.add_argument(
        "--full",
        action="store_true",
        help="render every ModelDeployment, ignoring what the last render recorded",
    )
    render.add_argument(
        "--max-removals",
        type=_count,
        default=DEFAULT_MAX_REMOVALS,
        metavar="N",
        help="remove at most N output folders (of ModelDeployments and ExternalModelProviders "
        "whose source was removed from the SOURCEs given) in one render; more are withheld and "
        f"the render exits 1 (default {DEFAULT_MAX_REMOVALS})",
    )
    render.add_argument("-o", "--output", choices=("text", "json"), default="text")
    render.set_defaults(run=run_render)


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a count (0 or more), got {value!r}")
    return int(value)


def _checked_path(value: str) -> str:
    """--path: a plain folder inside the work tree, never .git or above it."""
    try:
        parts = plain_parts(value.strip("/") if not value.startswith("/") else "/")
    except UnsafePath:
        parts = []
    if not parts or ".git" in parts:
        raise SourceError("--path", f"expected a folder inside the repository, got {value!r}")
    return "/".join(parts)


def _ownership(docs: Sequence[Document], args: argparse.Namespace, work: Path) -> Ownership:
    """What this render owns: the sources given, where each output comes from, duplicates."""
    return Ownership(
        origins_of(docs, work), roots_of(args.sources, work), duplicates(docs), args.max_removals
    )


def _sources(paths: Sequence[str], parsed: ParsedSources) -> list[Document]:
    docs = parsed.read(paths)
    for doc in docs:
        if doc.obj.get("kind") not in KINDS:
            raise SourceError(
                doc.where,
                f"{doc.kind} is not a ModelDeployment, InferenceProviderConfig or ExternalModelProvider",
            )
    if not any(d.obj.get("kind") == MODEL_DEPLOYMENT for d in docs):
        raise SourceError(", ".join(paths), "no ModelDeployment objects found")
    return docs


def _config_objects(
    docs: Sequence[Document], providers: Sequence[str] | None
) -> list[dict[str, Any]]:
    """The InferenceProviderConfigs in force: --providers, else the sources', else the shipped."""
    if providers:
        docs = read_documents(providers)
        for doc in docs:
            if doc.obj.get("kind") != INFERENCE_PROVIDER_CONFIG:
                raise SourceError(doc.where, f"expected an InferenceProviderConfig, got {doc.kind}")
        return [d.obj for d in docs]
    configs = [d.obj for d in docs if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG]
    return configs or bundled_config_objects()


def _schema_source(args: argparse.Namespace) -> tuple[str, Callable[[], Schemas]]:
    """The digest of the schemas in force, and how to parse them (only when something renders):
    the schema pack (part of Runway's fingerprint), overridden kind by kind by --crds or
    --crds-from-cluster."""
    if args.crds_from_cluster:
        # renderer.apply imports the kubernetes client (0.8 s): only when the cluster is asked
        crds = importlib.import_module("renderer.apply").cluster_crds(args.kubeconfig)
        return canonical(crds), lambda: Schemas.from_pack(load_pack()).overridden_by(
            Schemas.from_crds(crds)
        )
    if args.crds:
        for directory in args.crds:
            if not Path(directory).is_dir():
                raise SourceError(directory, "CRD directory does not exist")
        directories = list(args.crds)
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
        "builtin-schemas": importlib.metadata.version("kubernetes-validate"),
        "gateway": repr(gateway),
    }


def run_render(args: argparse.Namespace) -> int:
    """`render`, with Git failures as exit status 4 as --help promises."""
    try:
        return _run_render(args)
    except (GitError, UnsafePath) as err:
        print(f"runway: {err}", file=sys.stderr)
        return EXIT_GIT


def _run_render(args: argparse.Namespace) -> int:
    fingerprint = runway_fingerprint()
    git_dir = Path(args.repo) / ".git"
    parsed = ParsedSources(git_dir / SOURCES_CACHE if git_dir.is_dir() else None, fingerprint)
    docs = _sources(args.sources, parsed)
    configs = _config_objects(docs, args.providers)
    registry = build_registry(configs)
    pins = bundled_versions()
    gateway = _gateway(args.gateway, istio=args.istio)
    schema_digest, load_schemas = _schema_source(args)
    shared = inputs_digest(_shared_inputs(fingerprint, configs, schema_digest, pins, gateway))
    objects = [d.obj for d in docs]
    subdir = _checked_path(args.path)
    repo = Repo.open_or_init(args.repo)
    ownership = _ownership(docs, args, repo.work)
    schema_key = digest(fingerprint, schema_digest)[:16]
    cache_path = repo.git_dir / f"runway-render-cache-{digest(args.path)[:12]}.pickle"

    def context() -> dict[str, Any]:
        # Parsed upstream schemas, kept per content: parsing the CRDs is most of a small render.
        for stale in repo.git_dir.glob("runway-schemas-*.pickle"):
            if stale.name != f"runway-schemas-{schema_key}.pickle":
                stale.unlink(missing_ok=True)
        schemas = cached(repo.git_dir / f"runway-schemas-{schema_key}.pickle", load_schemas)
        return {"registry": registry, "schemas": schemas, "pins": pins, "gateway": gateway}

    def render_into_tree() -> tuple[Rendered, Mapping[str, str]]:
        current = repo.scan(subdir)
        if sys.stderr.isatty():
            count = sum(1 for o in objects if o.get("kind") == MODEL_DEPLOYMENT)
            print(f"rendering {count} ModelDeployments ...", file=sys.stderr)
        cache = None if args.full else RenderCache.load(cache_path)
        done = render_incremental(
            objects,
            current=current,
            cache=cache,
            shared=shared,
            context=context,
            digests=parsed.digests,
            stats=None if args.full else current.stats,  # --full: every file compared by content
            ownership=ownership,
        )
        return done, current

    def store(done: Rendered, current: Mapping[str, str]) -> int:
        _refuse_credentials(done.files, current)
        written = repo.write_tree(subdir, done.files, current, done.files.unchanged)
        done.cache.record_stats(repo.work / subdir)
        done.cache.save(cache_path)
        return len(written)

    if args.check:
        return _check(render_into_tree, args.output)
    with repo.locked():
        repo.recover(subdir)
        done, current = render_into_tree()
        changes = _changes(current, done.files)
        written = store(done, current)
        parsed.finish(repo.git_dir / SOURCES_CACHE)
        committed = None
        if args.commit or args.push:
            committed = repo.commit(subdir, written, done.files.written)
        if args.push:

            def rerender() -> None:
                nonlocal done, changes
                done, current = render_into_tree()
                changes = _changes(current, done.files)
                repo.commit(subdir, store(done, current), done.files.written)

            repo.push(args.push, args.branch, rerender=rerender)
    _report(done, changes, args.output, committed=committed)
    return 1 if _failed(done) else 0


def _check(render: Callable[[], tuple[Rendered, Mapping[str, str]]], output: str) -> int:
    """--check: render in memory and answer as kubectl diff does."""
    done, current = render()
    changes = _changes(current, done.files)
    _report(done, changes, output, committed=None)
    if _failed(done):
        return CHECK_REJECTED
    return CHECK_OUT_OF_DATE if any(changes.values()) else 0


def _failed(done: Rendered) -> bool:
    """Some object was not rendered, or a removal was withheld."""
    return any(r.error is not None for r in done.results) or bool(done.removals.withheld)


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


def _gateway(value: str | None, *, istio: bool) -> GatewayTarget | None:
    if value is None:
        return None
    namespace, _, name = value.partition("/")
    if not namespace or not name or "/" in name:
        raise SourceError("--gateway", f"expected NAMESPACE/NAME, got {value!r}")
    return GatewayTarget(name, namespace, istio)


def _changes(before: Mapping[str, str], after: Tree) -> dict[str, list[str]]:
    both = (set(after) & set(before)) - after.unchanged
    return {
        "added": sorted(set(after) - set(before)),
        "changed": sorted(p for p in both if after[p] != before[p]),
        "removed": sorted(set(before) - set(after)),
    }


def _report(
    done: Rendered,
    changes: Mapping[str, list[str]],
    output: str,
    *,
    committed: str | None,
) -> None:
    results = done.results
    if output == "json":
        payload = {
            "results": [
                {
                    "namespace": r.key.split("/")[0],
                    "name": r.key.split("/")[1],
                    "rendered": r.error is None,
                    "engine": r.engine,
                    "provider": r.provider,
                    "files": sorted(r.files),
                    "error": r.error,
                    "warnings": list(r.warnings),
                }
                for r in results
            ],
            "changes": changes,
            "commit": committed,
            "removals": {
                "removed": list(done.removals.removed),
                "withheld": list(done.removals.withheld),
                "reason": done.removals.reason,
                "outside": done.removals.outside,
            },
            "reused": len(results) - done.rendered,
            "schemas": _schema_sources(results),
        }
        sys.stdout.write(_json_report(payload))
        return
    for r in results:
        if r.error is None:
            print(f"{r.key}: rendered: {r.engine} on {r.provider}, {len(r.files)} files")
        else:
            print(f"{r.key}: not rendered (previous output kept): {r.error}")
        for warning in r.warnings:
            print(f"  warning: {warning}")
    _report_removals(done)
    for kind, origin in _schema_sources(results).items():
        print(f"schema {kind}: {origin}")
    failed = sum(1 for r in results if r.error is not None)
    summary = ", ".join(f"{len(v)} {k}" for k, v in changes.items())
    print(
        f"{len(results) - failed} rendered, {failed} failed ({len(results) - done.rendered} unchanged since the last render); files: {summary}"
        + (f"; commit {committed[:12]}" if committed else "")
    )


def _report_removals(done: Rendered) -> None:
    """Each folder removed, or each one withheld and why, and the count left alone."""
    removals = done.removals
    for key in removals.removed:
        print(f"{key}: removed (its source is no longer among the SOURCEs given)")
    if removals.withheld:
        print(f"not removed: {removals.reason}: " + ", ".join(removals.withheld))
    if removals.outside:
        print(
            f"{removals.outside} output folders kept: their sources are outside the SOURCEs "
            "given (or were never recorded); they are rendered only by a render given them"
        )


def _json_report(payload: Mapping[str, Any]) -> str:
    """The JSON report, keys sorted, one result per line (json's indenting encoder is pure
    Python: a third of a second for 10,000 results, where this takes a tenth of that)."""
    parts = []
    for key in sorted(payload):
        value = payload[key]
        if key == "results" and value:
            rows = ",\n    ".join(json.dumps(r, sort_keys=True) for r in value)
            text = f"[\n    {rows}\n  ]"
        else:
            text = json.dumps(value, sort_keys=True)
        parts.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _schema_sources(results: Sequence[Result]) -> dict[str, str]:
    """`apiVersion Kind` -> where its schema came from, for every kind these results checked."""
    return dict(sorted({k: v for r in results for k, v in r.schemas}.items()))
