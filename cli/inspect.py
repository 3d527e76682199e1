"""`runway validate`: the webhook's admission, offline, on manifests, for every kind the webhook
admits (ModelDeployment, InferenceProviderConfig, ExternalModelProvider). Kinds follow the one
rule of every command that reads sources (kubeio.sources.is_runway_kind): a kind of another API
group is skipped with a note, as kubeconform's -skip does, and allowed, as the webhook allows
it; an unknown kind of Runway's own groups is unusable input (exit 2, with a suggestion), as it
is for `render`. Also the helpers `explain` shares (reading manifests, the provider registry,
the per-object guard). The verdict of one object is core.admission.entry.admit_object's, the
webhook's own entry; `-o json` prints its JSON form, and its text and the repository policy are
kubeio.inspection's, which the portal's Models page shows too."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TextIO, TypeVar

from cli.exits import Exit
from cli.formats import FORMATS, Case, Finding, Lines, write_report
from cli.gatewayflag import add_gateway, gateway_target
from cli.options import (
    OUTPUTS,
    REPORTS,
    add_inputs,
    add_namespace,
    add_output,
    destinations,
    read_inputs,
    write_structured,
)
from core.admission.entry import admit_object
from core.admission.verdict import MD, NAMESPACED, Step, Verdict, kind_of, name_of
from core.fields.errors import SourceError
from core.model.destinations import Destinations
from core.model.kinds import ModelDeployment
from core.rendering.inferencegateway import is_enabled
from core.selection.configs import ProviderRegistry
from kubeio.guard import per_object
from kubeio.inspection import deny_by_policy, located, print_verdict
from kubeio.objects import object_key
from kubeio.registry import load_registry
from kubeio.shipped import runway_version
from kubeio.sources import Document, Kinds, read_documents, runway_documents

T = TypeVar("T")
log = logging.getLogger(__name__)
NEEDS_GATEWAY = (
    "spec.gateway.enabled: `runway render` refuses this object without --gateway NAMESPACE/NAME "
    "(the Gateway its HTTPRoute attaches to); give validate the --gateway render will have"
)
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
    add_common(validate, "manifests", outputs=REPORTS)
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
    add_gateway(
        validate,
        "the Gateway `render --gateway` will be given; without it, a ModelDeployment with "
        "spec.gateway.enabled: true is allowed with a warning that render needs one",
    )
    validate.set_defaults(run=run_validate)


def add_common(
    parser: argparse.ArgumentParser, what: str, outputs: Sequence[str] = OUTPUTS
) -> None:
    add_inputs(parser, what)
    parser.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfig YAML files or directories (default: the five shipped configs)",
    )
    add_output(parser, outputs)
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
    check: Callable[..., T],
    obj: Mapping[str, Any],
    registry: ProviderRegistry,
    failed: Callable[[str], T],
    **kwargs: Any,
) -> T:
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
    gateway = gateway_target(args.gateway)
    stored = _stored_versions(args, registry)
    judged = [_validate_doc(doc, registry, stored, allowed) for doc in kinds.documents]
    if gateway is None:
        judged = [_needs_gateway(v, registry) for v in judged]
    judged = deny_by_policy(judged, kinds.documents)
    if args.output in FORMATS:
        cases = _cases(judged, kinds.documents)
        write_report(args.output, "validate", cases, runway_version(), sys.stdout)
    elif args.output != "text":
        write_structured([v.as_json() for v in judged], args.output, sys.stdout)
    else:
        for verdict in judged:
            print_verdict(verdict, sys.stdout)
        print(_summary(judged), file=sys.stdout)
    return Exit.OK if all(v.allowed for v in judged) else Exit.PARTIAL


def _cases(judged: Sequence[Verdict], docs: Sequence[Document]) -> list[Case]:
    """Each verdict as a case at its document's file and line: a finding per error of a denied
    object (a skipped one, of another API group, is not a case)."""
    lines = Lines()
    cases = []
    for verdict, doc in zip(judged, docs, strict=True):
        if verdict.skipped:
            continue
        result = verdict.as_json()
        namespace = f"{result['namespace']}/" if result["namespace"] else ""
        findings = tuple(
            Finding("denied", error["message"], error["field"]) for error in result["errors"]
        )
        name = f"{result['kind']} {namespace}{result['name']}"
        cases.append(Case(name, doc.origin, lines.of(doc), findings))
    return cases


def _needs_gateway(verdict: Verdict, registry: ProviderRegistry) -> Verdict:
    """An allowed ModelDeployment that renders gateway objects, validated without --gateway:
    allowed (the webhook allows it), with a warning that `render` refuses it without one."""
    if not verdict.allowed or verdict.skipped or kind_of(verdict.object) != MD:
        return verdict
    if not is_enabled(ModelDeployment(verdict.object), registry):
        return verdict
    return replace(verdict, warnings=(*verdict.warnings, NEEDS_GATEWAY))


def _summary(judged: Sequence[Verdict]) -> str:
    skipped = sum(1 for v in judged if v.skipped)
    denied = sum(1 for v in judged if not v.allowed)
    text = f"{len(judged) - denied - skipped} allowed, {denied} denied"
    return text + (f", {skipped} skipped" if skipped else "")


def _stored_key(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    return (*kind_of(obj), key_of(obj))


def _stored_versions(
    args: argparse.Namespace, registry: ProviderRegistry
) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    """The --old objects as the cluster stored them: after the mutating webhook at CREATE (a
    ModelDeployment it denies, and every other kind, as it is). Their kinds follow the one rule
    (runway_documents): an unknown kind of Runway's groups is refused, not silently unmatched."""
    if not args.old:
        return {}
    stored: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for doc in runway_documents(read_documents(args.old, recursive=args.recursive)).runway:
        obj = admit_object(doc.obj, registry=registry, step=Step.MUTATE).object
        stored[_stored_key(obj)] = obj
    return stored


def _validate_doc(
    doc: Document,
    registry: ProviderRegistry,
    stored: Mapping[tuple[Any, ...], Mapping[str, Any]],
    allowed: Destinations,
) -> Verdict:
    """The verdict of one document's object (an object of another API group is skipped, and
    allowed, as the webhook allows it)."""
    obj = doc.obj
    old = stored.get(_stored_key(obj))
    verdict = guarded(
        admit_object,
        obj,
        registry,
        lambda detail: Verdict.failed(obj, old, detail),
        old=old,
        destinations=allowed,
    )
    return located(verdict, doc)
