"""`runway validate`: the webhook's admission, offline, on manifests, for every kind the webhook
admits (ModelDeployment, InferenceProviderConfig, ExternalModelProvider). Kinds follow the one
rule of every command that reads sources (kubeio.sources.is_runway_kind): a kind of another API
group is skipped with a note, as kubeconform's -skip does, and allowed, as the webhook allows
it; an unknown kind of Runway's own groups is unusable input (exit 2, with a suggestion), as it
is for `render`. Also the helpers `explain` shares (reading manifests, the provider registry,
the per-object guard). The verdict of one object, and its text, are kubeio.inspection's, which
the portal's Models page shows too."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from cli.exits import Exit
from cli.options import (
    add_inputs,
    add_namespace,
    add_output,
    destinations,
    read_inputs,
    write_structured,
)
from core.admission.configs import check_external_provider, check_provider_config
from core.admission.hydrate import hydrate
from core.fields.errors import SourceError
from core.model.destinations import Destinations
from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.guard import per_object
from kubeio.inspection import (
    EMP,
    IPC,
    MD,
    NAMESPACED,
    deny_by_policy,
    field_error,
    kind_of,
    name_of,
    print_verdict,
    validate_one,
    verdict,
)
from kubeio.objects import object_key
from kubeio.registry import load_registry
from kubeio.sources import SKIPPED, Document, Kinds, read_documents, runway_documents

__all__ = [  # one object's verdict moved to kubeio/inspection.py; read from here too
    "add_commands",
    "add_common",
    "guarded",
    "registry_of",
    "sources",
    "validate_one",
    "verdict",
]
log = logging.getLogger(__name__)
NAMESPACE_HELP = (
    "the namespace of ModelDeployments and ExternalModelProviders without one (as kubectl apply -n)"
)


def add_commands(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="run admission (mutate, then validate) offline, exactly as the webhook does",
        description="Admission as the webhook runs it, for ModelDeployments, "
        "InferenceProviderConfigs and ExternalModelProviders; kinds of other API groups are "
        "skipped (and allowed, as the webhook allows them), an unknown kind of Runway's groups "
        "is unusable input. Exit status: 0 every object allowed or skipped, 1 any denied, "
        "2 unusable input.",
    )
    add_common(validate, "manifests")
    validate.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="FILE",
        help="previous versions of the objects (matched by kind, namespace and name): "
        "exercises UPDATE rules",
    )
    validate.add_argument(
        "--allow-destination",
        action="append",
        default=[],
        metavar="HOST|CIDR",
        help="an internal host or network an ExternalModelProvider base URL may name, as "
        "`serve --allow-destination` (repeatable)",
    )
    validate.set_defaults(run=run_validate)


def add_common(parser: argparse.ArgumentParser, what: str) -> None:
    add_inputs(parser, what)
    parser.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfig YAML files or directories (default: the five shipped configs)",
    )
    add_output(parser)
    add_namespace(parser, NAMESPACE_HELP)


def documents(args: argparse.Namespace, stdin: TextIO | None) -> list[Document]:
    """The manifests' documents (-n applied); none at all is unusable input."""
    docs = read_inputs(args, NAMESPACED, stdin=stdin)
    if not docs:
        raise SourceError(", ".join([*args.files, *args.filenames]), "no objects found")
    return docs


def sources(args: argparse.Namespace, stdin: TextIO | None) -> Kinds:
    """The source-reading stage of `validate` and `explain`: the manifests' documents, each
    marked by the one rule of kinds (kubeio.sources.runway_documents; an unknown kind of
    Runway's groups is a SourceError). Checks of the sources as a whole belong here, after the
    kinds, so that both commands make them."""
    return runway_documents(documents(args, stdin))


def registry_of(args: argparse.Namespace) -> ProviderRegistry:
    registry = load_registry(args.providers)
    for problem in registry.problems:
        print(f"runway: warning: {problem}", file=sys.stderr)
    return registry


def key_of(obj: Mapping[str, Any]) -> str:
    md = ModelDeployment(obj)
    return object_key(md.namespace, md.name)


def guarded(
    check: Callable[..., dict[str, Any]],
    obj: Mapping[str, Any],
    registry: ProviderRegistry,
    failed: Callable[[str], dict[str, Any]],
    **kwargs: Any,
) -> dict[str, Any]:
    """`check` for one object, where any exception at all is that object's one error (the
    traceback goes to the debug log, -vv), in the shape `failed(detail)` builds: one object
    never takes down the others."""
    key = object_key(ModelDeployment(obj).namespace, name_of(obj))
    return per_object(key, "checked", lambda: check(obj, registry=registry, **kwargs), failed, log)


# -- validate --------------------------------------------------------------------------------


def run_validate(args: argparse.Namespace) -> int:
    kinds = sources(args, sys.stdin)
    registry = registry_of(args)
    allowed = destinations(args.allow_destination)
    stored = _stored_versions(args, registry)
    results = [
        _validate_doc(doc, registry, stored, allowed, ours=ours)
        for doc, ours in zip(kinds.documents, kinds.ours, strict=True)
    ]
    deny_by_policy(results, kinds.documents)
    if args.output != "text":
        write_structured(results, args.output, sys.stdout)
    else:
        for result in results:
            print_verdict(result, sys.stdout)
        print(_summary(results), file=sys.stdout)
    return Exit.OK if all(r["allowed"] for r in results) else Exit.PARTIAL


def _summary(results: Sequence[Mapping[str, Any]]) -> str:
    skipped = sum(1 for r in results if r["skipped"])
    denied = sum(1 for r in results if not r["allowed"])
    text = f"{len(results) - denied - skipped} allowed, {denied} denied"
    return text + (f", {skipped} skipped" if skipped else "")


def _stored_key(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    return (*kind_of(obj), key_of(obj))


def _stored_versions(
    args: argparse.Namespace, registry: ProviderRegistry
) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    """The --old objects as the cluster stored them: a ModelDeployment after its own mutation
    at CREATE, an ExternalModelProvider as it is."""
    if not args.old:
        return {}
    stored: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    docs = read_documents(args.old)
    for doc in docs:
        obj = doc.obj
        if kind_of(obj) == MD:
            hydration = hydrate(obj, registry=registry)
            obj = obj if hydration.errors else hydration.obj
        stored[_stored_key(obj)] = obj
    return stored


def _validate_doc(
    doc: Document,
    registry: ProviderRegistry,
    stored: Mapping[tuple[Any, ...], Mapping[str, Any]],
    allowed: Destinations,
    *,
    ours: bool,
) -> dict[str, Any]:
    obj = doc.obj
    old = stored.get(_stored_key(obj))
    kind = kind_of(obj)
    checks: dict[tuple[str | None, Any], Callable[..., dict[str, Any]]] = {
        MD: validate_one,
        IPC: _validate_config,
        EMP: _validate_external,
    }
    if not ours:
        result = verdict(obj, doc, old, errors=[], skipped=SKIPPED)
    else:
        check = checks[kind]
        extra = {"destinations": allowed} if kind == EMP else {}
        result = guarded(
            check,
            obj,
            registry,
            lambda detail: verdict(obj, doc, old, errors=[{"field": "", "message": detail}]),
            old=old,
            **extra,
        )
    return result | {
        "source": doc.where,
        "errors": [e | {"field": doc.field(e["field"])} for e in result["errors"]],
    }


def _validate_config(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None, registry: ProviderRegistry
) -> dict[str, Any]:
    errors = [field_error(e) for e in check_provider_config(obj)]
    return verdict(obj, None, old, errors=errors)


def _validate_external(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None,
    registry: ProviderRegistry,
    destinations: Destinations,
) -> dict[str, Any]:
    errors = check_external_provider(obj, old=old, destinations=destinations)
    return verdict(obj, None, old, errors=[field_error(e) for e in errors])
