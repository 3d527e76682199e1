"""What `runway explain` says about one ModelDeployment: how its engine and provider are
selected, with every candidate provider and every rule result, in the documented
`explain -o json` shape and as its text lines. `runway explain` (cli/explain.py) and the
portal's Models page (ui/) both call these.

One story: the provider the object runs on is marked `chosen`. When it was set explicitly (or
kept from an earlier version), the candidates are what automatic selection would have ranked,
for comparison, and the chosen provider's line says when automatic selection would have excluded
it, and why the explicit choice is still honoured (its test backend runs instead of an engine)
or that admission denies it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TextIO

from core.admission.entry import admit_object
from core.admission.hydrate import Hydration
from core.admission.verdict import MD, Step, name_of
from core.model.kinds import DEFAULT_NAMESPACE, Choice, ModelDeployment
from core.selection.choice import CandidateTrace, Decision, rank_providers, trace_warnings
from core.selection.compatibility import Fit, compatibility
from core.selection.configs import ProviderRegistry

TEST_BACKEND = "this object runs the provider's test backend instead of an engine"
NOT_READY = "admission takes an explicit choice of a provider that is not ready, with a warning"
DENIED = "admission denies this choice (runway validate says why)"


def explain_one(obj: Mapping[str, Any], *, registry: ProviderRegistry) -> dict[str, Any]:
    """The selection trace of one object, in the documented `explain -o json` shape: of the
    selection admission's mutation made (core.admission.entry.admit_object), which a
    ModelDeployment's verdict always records."""
    md = ModelDeployment(obj)
    hydration = admit_object(obj, registry=registry, step=Step.MUTATE, kind=MD).hydration
    assert hydration is not None  # every ModelDeployment's verdict has one
    candidates: tuple[CandidateTrace, ...] = ()
    if hydration.engine is not None:
        # Admission stops at the winning rule; the trace evaluates every rule of every candidate.
        hydrated = ModelDeployment(hydration.obj)
        candidates = rank_providers(_as_selection_saw(hydration), hydrated, registry)
    warnings = list(hydration.warnings)
    warnings += [w for w in trace_warnings(candidates) if w not in warnings]
    chosen = hydration.provider
    status = _explicit_status(ModelDeployment(hydration.obj), registry)
    return {
        "name": md.name,
        "namespace": md.namespace or DEFAULT_NAMESPACE,
        "engine": _decision(hydration.engine, "type"),
        "provider": _decision(chosen, "name"),
        "candidates": [_candidate(c, chosen, status) for c in candidates],
        "error": "; ".join(str(e) for e in hydration.errors) or None,
        "warnings": warnings,
    }


def failed_explanation(obj: Mapping[str, Any]) -> Callable[[str], dict[str, Any]]:
    def failed(detail: str) -> dict[str, Any]:
        """The one error of an object whose trace raised, in explain's shape."""
        return {
            "name": name_of(obj),
            "namespace": ModelDeployment(obj).namespace or DEFAULT_NAMESPACE,
            "engine": None,
            "provider": None,
            "candidates": [],
            "error": detail,
            "warnings": [],
        }

    return failed


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


def _explicit_status(md: ModelDeployment, registry: ProviderRegistry) -> str | None:
    """For an explicitly chosen provider that automatic selection excludes: why admission
    keeps it, or that it denies it (validation's compatibility rule,
    core.selection.compatibility: a renderer, a config, the engine offered this way, unless a
    test backend runs instead; not ready is only a warning). None when nothing excludes it."""
    fit = compatibility(md, registry)
    if fit.denied:
        return DENIED
    if fit.fit is Fit.TEST_BACKEND:
        return TEST_BACKEND
    return NOT_READY if not fit.ready else None


def _candidate(
    candidate: CandidateTrace, chosen: Decision | None, status: str | None
) -> dict[str, Any]:
    """One candidate; `chosen` true for the provider the object runs on, and for an explicit
    choice a `note` on how automatic selection saw it (and why the choice stands, if it
    would have been excluded)."""
    is_chosen = chosen is not None and chosen.value == candidate.name
    explicit = is_chosen and chosen is not None and chosen.choice is Choice.EXPLICIT
    note = None
    if explicit and (status is None or candidate.excluded is None):
        note = f"automatic selection: {candidate.excluded or f'priority {candidate.priority}'}"
    elif explicit:
        joined = "and" if status == DENIED else "but"
        note = f"automatic selection would exclude it ({candidate.excluded}), {joined} {status}"
    return {
        "name": candidate.name,
        "priority": candidate.priority,
        "excluded": candidate.excluded,
        "chosen": is_chosen,
        "note": note,
        "rules": [
            {"condition": r.condition, "priority": r.priority, "result": r.result, "error": r.error}
            for r in candidate.rules
        ],
    }


def print_explanation(result: Mapping[str, Any], out: TextIO) -> None:
    print(f"{result['namespace']}/{result['name']}", file=out)
    for what, key in (("engine", "type"), ("provider", "name")):
        decision = result[what]
        if decision[key] is not None:
            how = "explicit" if decision["explicit"] else "auto"
            print(f"  {what + ':':<10} {decision[key]} ({how}) {decision['reason']}", file=out)
    if result["error"]:
        print(f"  error:     {result['error']}", file=out)
    explicit = result["provider"]["explicit"] is True
    if result["candidates"]:
        heading = " (automatic selection, for comparison: the provider is set)" if explicit else ""
        print(f"  candidates{heading}:", file=out)
    for candidate in result["candidates"]:
        print(f"    {candidate['name']:<10} {_state(candidate)}", file=out)
        for rule in candidate["rules"]:
            shown = {True: "true", False: "false"}.get(rule["result"], "error")
            error = f"  ({rule['error']})" if rule["error"] else ""
            print(f"      [{shown:<5}] p{rule['priority']:<4} {rule['condition']}{error}", file=out)
    for warning in result["warnings"]:
        print(f"  warning:   {warning}", file=out)


def _state(candidate: Mapping[str, Any]) -> str:
    """What a candidate line says after the name."""
    if candidate["note"] is not None:
        return f"chosen (explicit); {candidate['note']}"
    if candidate["excluded"]:
        return f"excluded: {candidate['excluded']}"
    return f"priority {candidate['priority']}"
