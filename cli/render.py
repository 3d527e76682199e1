"""`runway render`: ModelDeployments in, a committed GitOps tree out."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes

from providers.errors import SourceError
from providers.gateway import GatewayTarget
from providers.model import EXTERNAL_MODEL_PROVIDER, INFERENCE_PROVIDER_CONFIG, MODEL_DEPLOYMENT
from providers.registry import ProviderRegistry
from renderer.apply import apply_tree, summary
from renderer.gitops import Repo
from renderer.render import HYDRATED_FILE, Result, render_all, tree_files
from renderer.schemapack import load_pack
from renderer.sources import (
    Document,
    bundled_config_objects,
    bundled_flag_catalogs,
    bundled_versions,
    load_registry,
    parse_documents,
    read_documents,
)
from renderer.strict import Schemas

KINDS = (MODEL_DEPLOYMENT, INFERENCE_PROVIDER_CONFIG, EXTERNAL_MODEL_PROVIDER)
# `render --check` follows `kubectl diff`: 0 no differences, 1 differences, above 1 an error.
CHECK_OUT_OF_DATE = 1
CHECK_REJECTED = 3  # a ModelDeployment was not rendered (2 stays "unusable input", 4 "Git failed")


def add_commands(commands: Any) -> None:
    render = commands.add_parser(
        "render",
        help="render ModelDeployments into a GitOps repository (upstream objects, strictly checked)",
        description="Exit status: 0 all rendered; 1 some ModelDeployment was not rendered (the rest "
        "were); 2 unusable input; 4 Git failed. With --check, as kubectl diff: 0 up to date; 1 the "
        "tree is out of date; 3 some ModelDeployment was not rendered (out of date or not).",
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
    render.add_argument("-o", "--output", choices=("text", "json"), default="text")
    render.set_defaults(run=run_render)


def _sources(paths: Sequence[str]) -> list[Document]:
    docs = read_documents(paths)
    for doc in docs:
        if doc.obj.get("kind") not in KINDS:
            raise SourceError(
                doc.where,
                f"{doc.kind} is not a ModelDeployment, InferenceProviderConfig or ExternalModelProvider",
            )
    if not any(d.obj.get("kind") == MODEL_DEPLOYMENT for d in docs):
        raise SourceError(", ".join(paths), "no ModelDeployment objects found")
    return docs


def _registry(docs: Sequence[Document], providers: Sequence[str] | None) -> ProviderRegistry:
    configs = [d.obj for d in docs if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG]
    if providers:
        return load_registry(providers)
    return ProviderRegistry.from_objects(
        configs or bundled_config_objects(), flags=bundled_flag_catalogs()
    )


def _previous(
    files: Mapping[str, str],
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, str]]]:
    """From the current tree: hydrated ModelDeployments by folder (for stickiness), and each
    folder's files (kept when that ModelDeployment fails this time)."""
    hydrated: dict[str, dict[str, Any]] = {}
    folders: dict[str, dict[str, str]] = {}
    for path, text in files.items():
        parts = path.split("/")
        if len(parts) != 3:
            continue
        key = "/".join(parts[:2])
        folders.setdefault(key, {})[parts[2]] = text
        if parts[2] == HYDRATED_FILE:
            for doc in parse_documents(text, path):
                hydrated[key] = doc.obj
    return hydrated, folders


def run_render(args: argparse.Namespace) -> int:
    docs = _sources(args.sources)
    registry = _registry(docs, args.providers)
    schemas = _schemas(args)
    pins = bundled_versions()
    gateway = _gateway(args.gateway, istio=args.istio)
    repo = Repo.open_or_init(args.repo)

    def render_into_tree() -> tuple[list[Result], dict[str, str], dict[str, str]]:
        current = repo.read_files(args.path)
        hydrated, kept = _previous(current)
        if sys.stderr.isatty():
            print(
                f"rendering {sum(1 for d in docs if d.obj.get('kind') == MODEL_DEPLOYMENT)} ModelDeployments ...",
                file=sys.stderr,
            )
        results = render_all(
            [d.obj for d in docs],
            previous=hydrated,
            registry=registry,
            schemas=schemas,
            pins=pins,
            gateway=gateway,
        )
        return results, tree_files(results, kept), current

    if args.check:
        results, files, current = render_into_tree()
        changes = _changes(current, files)
        _report(results, changes, args.output, committed=None, schemas=schemas)
        if any(r.error is not None for r in results):
            return CHECK_REJECTED
        return CHECK_OUT_OF_DATE if any(changes.values()) else 0
    with repo.locked():
        repo.recover(args.path)
        results, files, current = render_into_tree()
        changes = _changes(current, files)
        repo.replace_tree(args.path, files)
        committed = None
        if args.commit or args.push:
            committed = repo.commit(args.path)
        if args.push:

            def rerender() -> None:
                _, again, _ = render_into_tree()
                repo.replace_tree(args.path, again)
                repo.commit(args.path)

            repo.push(args.push, args.branch, rerender=rerender)
    _report(results, changes, args.output, committed=committed, schemas=schemas)
    return 0 if all(r.error is None for r in results) else 1


def _schemas(args: argparse.Namespace) -> Schemas:
    """The schema pack, overridden kind by kind by --crds or --crds-from-cluster."""
    pack = Schemas.from_pack(load_pack())
    if args.crds:
        return pack.overridden_by(Schemas.from_directories(args.crds))
    if args.crds_from_cluster:
        return pack.overridden_by(_cluster_schemas(args.kubeconfig))
    return pack


def _cluster_schemas(kubeconfig: str | None) -> Schemas:
    """The CRDs installed in the cluster: what its API server will accept, exactly."""
    with kubernetes.config.new_client_from_config(config_file=kubeconfig) as client:
        listed = kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition()
        crds = client.sanitize_for_serialization(listed)["items"]
    server = client.configuration.host
    return Schemas.from_crds(
        (f"cluster {server}, CRD {crd['metadata']['name']}", crd) for crd in crds
    )


def _gateway(value: str | None, *, istio: bool) -> GatewayTarget | None:
    if value is None:
        return None
    namespace, _, name = value.partition("/")
    if not namespace or not name or "/" in name:
        raise SourceError("--gateway", f"expected NAMESPACE/NAME, got {value!r}")
    return GatewayTarget(name, namespace, istio)


def _changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    return {
        "added": sorted(set(after) - set(before)),
        "changed": sorted(p for p in set(after) & set(before) if after[p] != before[p]),
        "removed": sorted(set(before) - set(after)),
    }


def _report(
    results: Sequence[Result],
    changes: Mapping[str, list[str]],
    output: str,
    *,
    committed: str | None,
    schemas: Schemas,
) -> None:
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
            "schemas": schemas.used_sources(),
        }
        json.dump(payload, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return
    for r in results:
        if r.error is None:
            print(f"{r.key}: rendered: {r.engine} on {r.provider}, {len(r.files)} files")
        else:
            print(f"{r.key}: not rendered (previous output kept): {r.error}")
        for warning in r.warnings:
            print(f"  warning: {warning}")
    for kind, origin in schemas.used_sources().items():
        print(f"schema {kind}: {origin}")
    failed = sum(1 for r in results if r.error is not None)
    summary = ", ".join(f"{len(v)} {k}" for k, v in changes.items())
    print(
        f"{len(results) - failed} rendered, {failed} failed; files: {summary}"
        + (f"; commit {committed[:12]}" if committed else "")
    )


def add_apply_command(commands: Any) -> None:
    apply = commands.add_parser(
        "apply",
        help="server-side apply a rendered tree with strict field validation",
        description="Exit status: 0 everything applied; 1 something was refused (IncompatibleUpstream is recorded "
        "in the ModelDeployment's status); 4 the API server could not be reached.",
    )
    apply.add_argument("path", metavar="PATH", help="the rendered tree (e.g. REPO/rendered)")
    apply.add_argument("--kubeconfig", metavar="FILE")
    apply.add_argument("--field-manager", default="runway")
    apply.set_defaults(run=run_apply)


def run_apply(args: argparse.Namespace) -> int:
    root = Path(args.path)
    if not root.is_dir():
        raise SourceError(args.path, "not a rendered tree (no such directory)")
    with kubernetes.config.new_client_from_config(config_file=args.kubeconfig) as client:
        results = apply_tree(
            client, root, field_manager=args.field_manager, now=dt.datetime.now(dt.UTC)
        )
    for result in results:
        state = "applied" if result.ok else f"refused: {result.message}"
        print(f"{result.folder}: {result.obj}: {state}")
    print(summary(results))
    return 0 if all(r.ok for r in results) else 1
