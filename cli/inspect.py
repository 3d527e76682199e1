"""`runway explain` and `runway validate`: the admission pipeline, offline, on YAML files."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from cli.exits import Exit
from core.admission.hydrate import Hydration, hydrate
from core.admission.pipeline import Admission, admit, patch_of
from core.fields.errors import FieldError, SourceError
from core.model.kinds import API_VERSION, MODEL_DEPLOYMENT, ModelDeployment
from core.selection.choice import CandidateTrace, Decision, rank_providers, trace_warnings
from core.selection.configs import ProviderRegistry
from kubeio.guard import per_object
from kubeio.objects import DEFAULT_NAMESPACE, object_key
from kubeio.registry import load_registry
from kubeio.sources import Document, read_documents

log = logging.getLogger(__name__)


def add_commands(commands: Any) -> None:
    explain = commands.add_parser(
        "explain",
        help="show how the engine and provider are selected for each ModelDeployment",
        description="For every ModelDeployment in FILEs, the engine and provider selection with "
        "every candidate provider and every rule result.",
    )
    _common(explain)
    explain.set_defaults(run=run_explain)
    validate = commands.add_parser(
        "validate",
        help="run admission (mutate, then validate) offline, exactly as the webhook does",
        description="Exit status: 0 every object allowed, 1 any denied, 2 unusable input.",
    )
    _common(validate)
    validate.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="FILE",
        help="previous versions of the objects (matched by namespace/name): exercises UPDATE rules",
    )
    validate.set_defaults(run=run_validate)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="YAML files or directories of ModelDeployments"
    )
    parser.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfig YAML files or directories (default: the five shipped configs)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def model_deployments(paths: Sequence[str]) -> list[Document]:
    """The ModelDeployments in the files; any other kind is unusable input."""
    docs = read_documents(paths)
    for doc in docs:
        if doc.obj.get("apiVersion") != API_VERSION or doc.obj.get("kind") != MODEL_DEPLOYMENT:
            raise SourceError(doc.where, f"{doc.kind} is not a {API_VERSION} {MODEL_DEPLOYMENT}")
    if not docs:
        raise SourceError(", ".join(paths), "no ModelDeployment objects found")
    return docs


def _registry(args: argparse.Namespace) -> ProviderRegistry:
    registry = load_registry(args.providers)
    for problem in registry.problems:
        print(f"runway: warning: {problem}", file=sys.stderr)
    return registry


def key_of(obj: Mapping[str, Any]) -> str:
    md = ModelDeployment(obj)
    return object_key(md.namespace, md.name)


# -- explain ---------------------------------------------------------------------------------


def run_explain(args: argparse.Namespace) -> int:
    docs = model_deployments(args.files)
    registry = _registry(args)
    results = [guarded(explain_one, doc.obj, registry) for doc in docs]
    if args.output == "json":
        _dump_json(results, sys.stdout)
    else:
        for result in results:
            _print_explanation(result, sys.stdout)
    return Exit.OK


def explain_one(obj: Mapping[str, Any], *, registry: ProviderRegistry) -> dict[str, Any]:
    """The selection trace of one object, in the documented `explain -o json` shape."""
    md = ModelDeployment(obj)
    hydration = hydrate(obj, registry=registry)
    candidates: tuple[CandidateTrace, ...] = ()
    if hydration.engine is not None:
        # Admission stops at the winning rule; the trace evaluates every rule of every candidate.
        hydrated = ModelDeployment(hydration.obj)
        candidates = rank_providers(_as_selection_saw(hydration), hydrated, registry)
    warnings = list(hydration.warnings)
    warnings += [w for w in trace_warnings(candidates) if w not in warnings]
    return {
        "name": md.name,
        "namespace": md.namespace or DEFAULT_NAMESPACE,
        "engine": _decision(hydration.engine, "type"),
        "provider": _decision(hydration.provider, "name"),
        "candidates": [_candidate(c) for c in candidates],
        "error": "; ".join(str(e) for e in hydration.errors) or None,
        "warnings": warnings,
    }


def _as_selection_saw(hydration: Hydration) -> dict[str, Any]:
    """The spec rules were evaluated against: without the provider Runway itself stamped."""
    spec = dict(hydration.obj["spec"])
    provider = spec.get("provider")
    auto = hydration.provider is not None and hydration.provider.choice == "auto"
    if auto and isinstance(provider, dict):
        spec["provider"] = {k: v for k, v in provider.items() if k != "name"}
        if not spec["provider"]:
            del spec["provider"]
    return spec


def _decision(decision: Decision | None, key: str) -> dict[str, Any]:
    if decision is None:
        return {key: None, "reason": None, "explicit": None}
    return {
        key: decision.value,
        "reason": decision.reason,
        "explicit": decision.choice == "explicit",
    }


def _candidate(candidate: CandidateTrace) -> dict[str, Any]:
    return {
        "name": candidate.name,
        "priority": candidate.priority,
        "excluded": candidate.excluded,
        "rules": [
            {"condition": r.condition, "priority": r.priority, "result": r.result, "error": r.error}
            for r in candidate.rules
        ],
    }


def _print_explanation(result: Mapping[str, Any], out: TextIO) -> None:
    print(f"{result['namespace']}/{result['name']}", file=out)
    for what, key in (("engine", "type"), ("provider", "name")):
        decision = result[what]
        if decision[key] is not None:
            how = "explicit" if decision["explicit"] else "auto"
            print(f"  {what + ':':<10} {decision[key]} ({how}) {decision['reason']}", file=out)
    if result["error"]:
        print(f"  error:     {result['error']}", file=out)
    if result["candidates"]:
        print("  candidates:", file=out)
    for candidate in result["candidates"]:
        state = (
            f"excluded: {candidate['excluded']}"
            if candidate["excluded"]
            else f"priority {candidate['priority']}"
        )
        print(f"    {candidate['name']:<10} {state}", file=out)
        for rule in candidate["rules"]:
            shown = {True: "true", False: "false"}.get(rule["result"], "error")
            error = f"  ({rule['error']})" if rule["error"] else ""
            print(f"      [{shown:<5}] p{rule['priority']:<4} {rule['condition']}{error}", file=out)
    for warning in result["warnings"]:
        print(f"  warning:   {warning}", file=out)


# -- validate --------------------------------------------------------------------------------


def run_validate(args: argparse.Namespace) -> int:
    docs = model_deployments(args.files)
    registry = _registry(args)
    stored = _stored_versions(args.old, registry)
    results = [
        guarded(validate_one, doc.obj, registry, old=stored.get(key_of(doc.obj))) for doc in docs
    ]
    if args.output == "json":
        _dump_json(results, sys.stdout)
    else:
        for result in results:
            _print_verdict(result, sys.stdout)
        denied = sum(1 for r in results if not r["allowed"])
        print(f"{len(results) - denied} allowed, {denied} denied", file=sys.stdout)
    return Exit.OK if all(r["allowed"] for r in results) else Exit.PARTIAL


def _stored_versions(paths: Sequence[str], registry: ProviderRegistry) -> dict[str, dict[str, Any]]:
    """The --old objects as the cluster stored them: after their own mutation at CREATE."""
    if not paths:
        return {}
    stored: dict[str, dict[str, Any]] = {}
    for doc in model_deployments(paths):
        hydration = hydrate(doc.obj, registry=registry)
        stored[key_of(doc.obj)] = doc.obj if hydration.errors else hydration.obj
    return stored


def guarded(
    check: Callable[..., dict[str, Any]],
    obj: Mapping[str, Any],
    registry: ProviderRegistry,
    **kwargs: Any,
) -> dict[str, Any]:
    """`check` for one object, where any exception at all is that object's one error (the
    traceback goes to the debug log, -vv): one object never takes down the others."""
    md = ModelDeployment(obj)
    name = md.name if isinstance(md.name, str) else str(md.name)
    return per_object(
        object_key(md.namespace, name),
        "checked",
        lambda: check(obj, registry=registry, **kwargs),
        lambda detail: _failed(check, obj, name, md.namespace, detail, kwargs),
        log,
    )


def _failed(  # noqa: PLR0917
    check: Callable[..., dict[str, Any]],
    obj: Mapping[str, Any],
    name: str,
    namespace: str,
    detail: str,
    kwargs: Mapping[str, Any],
) -> dict[str, Any]:
    """The one error of an object whose check raised, in the shape `check` answers in."""
    base = {"name": name, "namespace": namespace or DEFAULT_NAMESPACE}
    if check is explain_one:
        return base | {
            "engine": None,
            "provider": None,
            "candidates": [],
            "error": detail,
            "warnings": [],
        }
    return base | {
        "operation": "UPDATE" if kwargs.get("old") is not None else "CREATE",
        "allowed": False,
        "errors": [{"field": "", "message": detail}],
        "warnings": [],
        "patch": [],
        "object": dict(obj),
    }


def validate_one(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, registry: ProviderRegistry
) -> dict[str, Any]:
    """One object's admission, in the documented `validate -o json` shape."""
    admission: Admission = admit(obj, old=old, registry=registry)
    md = ModelDeployment(obj)
    return {
        "name": md.name,
        "namespace": md.namespace or DEFAULT_NAMESPACE,
        "operation": "UPDATE" if old is not None else "CREATE",
        "allowed": admission.allowed,
        "errors": [_error(e) for e in admission.errors],
        "warnings": list(admission.warnings),
        "patch": patch_of(obj, admission),
        "object": admission.obj,
    }


def _error(error: FieldError) -> dict[str, str]:
    return {"field": error.path, "message": f"{error.reason}: {error.detail}"}


def _print_verdict(result: Mapping[str, Any], out: TextIO) -> None:
    name = f"{result['namespace']}/{result['name']}"
    if result["allowed"]:
        spec = result["object"]["spec"]
        annotations = result["object"]["metadata"].get("annotations", {})
        engine = f"{spec['engine']['type']} ({annotations.get('airunway.ai/engine-selection', 'explicit')})"
        provider = f"{spec['provider']['name']} ({annotations.get('airunway.ai/provider-selection', 'explicit')})"
        print(f"{name}: allowed: engine {engine}, provider {provider}", file=out)
    else:
        print(f"{name}: denied", file=out)
    for error in result["errors"]:
        print(f"  {error['field']}: {error['message']}", file=out)
    for warning in result["warnings"]:
        print(f"  warning: {warning}", file=out)


def _dump_json(value: Any, out: TextIO) -> None:
    json.dump(value, out, indent=2, sort_keys=True)
    out.write("\n")
