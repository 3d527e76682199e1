"""Engine and provider selection, and the full trace of every candidate and rule for `explain`.

Engine: over the ready providers (or only the explicitly named one), keep the engines each offers
for this GPU/CPU placement and serving mode, then take the first in the order vllm > sglang >
trtllm > llamacpp. Provider: over the ready providers that can run the engine this way, a
provider's priority is its highest matching rule; the highest priority wins, ties break by name.
A provider with no rules, or none matching, is explicit-only: never selected automatically.

Admission evaluates the candidates' rules in that order (priority, then provider name, then rule
order) and stops at the first match, which no remaining rule can beat. `rank_providers`
evaluates every rule, for `explain`; both pick the same provider.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core.cel.rules import Bound, Rule, activation, evaluate, fields_read
from core.fields.errors import FieldError, Reason
from core.model.kinds import ENGINE_PREFERENCE, Choice, ModelDeployment
from core.selection.configs import ProviderConfig, ProviderRegistry, SelectionOrder


@dataclass(frozen=True, slots=True)
class Decision:
    """A selected value, why, and whether the user chose it or Runway did."""

    value: str
    reason: str
    choice: Choice


@dataclass(frozen=True, slots=True)
class RuleTrace:
    condition: str
    priority: int
    result: bool | Literal["error"]
    error: str | None


@dataclass(frozen=True, slots=True)
class CandidateTrace:
    """One provider as automatic selection saw it: its priority, or why it was excluded."""

    name: str
    priority: int | None
    excluded: str | None
    rules: tuple[RuleTrace, ...]


def placement(gpu: bool, mode: str) -> str:
    return f"gpu={'true' if gpu else 'false'}, mode={mode}"


def select_engine(
    md: ModelDeployment, registry: ProviderRegistry, *, explicit_provider: str
) -> Decision | FieldError:
    """Automatic engine choice for an object whose spec.engine.type is empty: a function of
    the registry, the explicit provider, GPU and mode alone, so the registry keeps each."""
    key = ("engine", explicit_provider, md.needs_gpu, md.serving_mode)
    known: Decision | FieldError | None = registry.answers.get(key)
    if known is None:
        known = _select_engine(registry, explicit_provider, gpu=key[2], mode=key[3])
        registry.remember(key, known)
    return known


def _select_engine(
    registry: ProviderRegistry, explicit_provider: str, *, gpu: bool, mode: str
) -> Decision | FieldError:
    named = registry.get(explicit_provider) if explicit_provider else None
    pool = (
        [named]
        if named is not None
        else [c for c in registry.ready() if c.name in registry.plugins]
    )
    for engine in ENGINE_PREFERENCE:
        offered_by = [c.name for c in pool if c.supports(engine, gpu=gpu, mode=mode)]
        if offered_by:
            order = " > ".join(ENGINE_PREFERENCE)
            reason = (
                f"auto-selected: {engine} is the most preferred engine ({order}) offered for "
                f"{placement(gpu, mode)} by {', '.join(offered_by)}"
            )
            return Decision(engine.value, reason, Choice.AUTO)  # plain str: it goes into the object
    if named is not None:
        why = f"provider {named.name} offers no engine for {placement(gpu, mode)}"
    else:
        why = f"no ready provider offers an engine for {placement(gpu, mode)}"
    hint = "set spec.engine.type" if gpu else "set spec.resources.gpu.count > 0"
    detail = f"no engine can be selected: {why}; {hint}"
    return FieldError("spec.engine.type", Reason.REQUIRED, detail)


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """Automatic provider selection: the decision (or why none), warnings, rules evaluated."""

    decision: Decision | FieldError
    warnings: tuple[str, ...]
    evaluated: int


def select_provider(
    spec: Mapping[str, Any], md: ModelDeployment, registry: ProviderRegistry
) -> ProviderChoice:
    """The highest-priority matching rule of the candidates, evaluating no rule after it.

    The answer is a function of the registry, the engine, GPU and mode (which choose the
    candidates) and the spec fields the candidates' rules read, as CEL is given them: the
    registry keeps it per those, their text written by repr (exact for JSON values: `1`, `1.0`,
    `True` and `"1"` differ, and keys keep their order), when that text is short."""
    wanted = _Wanted.of(md, registry)
    key = ("candidates", wanted.engine, wanted.gpu, wanted.mode)
    order: SelectionOrder | None = registry.answers.get(key)
    if order is None:
        order = registry.selection_order(
            tuple(c.name for c in registry.configs.values() if _excluded(c, wanted) is None)
        )
        registry.remember(key, order)
    given = _given(spec, order.reads, wanted)
    known = registry.answers.get(given) if given is not None else None
    if known is None:
        known = _select_provider(spec, registry, wanted, order)
        if given is not None:
            registry.remember(given, known)
    choice: ProviderChoice = known
    return choice


MAX_REMEMBERED_INPUT = 2048  # characters of a selection's input text the registry keeps


def _given(
    spec: Mapping[str, Any], reads: frozenset[str] | None, wanted: _Wanted
) -> tuple[Any, ...] | None:
    """The candidates and what their rules are given (core.cel.rules.activation: the fields
    read, in sorted order, or all of spec) as a key of registry.answers; None when too long."""
    given = spec if reads is None else {key: spec[key] for key in sorted(reads) if key in spec}
    try:
        text = repr(given)
    except ValueError:  # an integer too long to write (the structure check refuses it first)
        return None
    if len(text) > MAX_REMEMBERED_INPUT:
        return None
    return ("provider", wanted.engine, wanted.gpu, wanted.mode, text)


def _select_provider(
    spec: Mapping[str, Any], registry: ProviderRegistry, wanted: _Wanted, order: SelectionOrder
) -> ProviderChoice:
    bound: Bound | None = None
    warnings: list[str] = []
    for count, (rule, name) in enumerate(order.rules, start=1):
        if bound is None:
            bound = activation(registry.env, spec, order.reads)
        outcome = evaluate(rule, bound)
        if outcome.error is not None:
            warnings.append(rule_warning(name, rule.condition, outcome.error))
        elif outcome.matched:
            reason = (
                f'auto-selected: rule "{rule.condition}" matched at priority {rule.priority}, '
                f"the highest priority matched among {order.among} (ties break by name)"
            )
            return ProviderChoice(Decision(name, reason, Choice.AUTO), tuple(warnings), count)
    why = "; ".join(
        f"{c.name}: {_excluded(c, wanted) or _unmatched(c)}" for c in registry.configs.values()
    )
    detail = (
        f"no provider can be selected automatically ({why or 'no providers configured'}); "
        "set spec.provider.name"
    )
    return ProviderChoice(
        FieldError("spec.provider.name", Reason.REQUIRED, detail), tuple(warnings), len(order.rules)
    )


def rank_providers(
    spec: Mapping[str, Any], md: ModelDeployment, registry: ProviderRegistry
) -> tuple[CandidateTrace, ...]:
    """Every configured provider with its priority, or the reason it cannot be auto-selected;
    every rule of every candidate is evaluated (the full trace `explain` prints)."""
    bound: Bound | None = None
    traces: list[CandidateTrace] = []
    wanted = _Wanted.of(md, registry)
    for config in registry.configs.values():
        excluded = _excluded(config, wanted)
        if excluded is not None:
            traces.append(CandidateTrace(config.name, None, excluded, ()))
            continue
        if bound is None:  # the same input admission gives the same rules
            candidates = [c for c in registry.configs.values() if _excluded(c, wanted) is None]
            bound = activation(
                registry.env, spec, fields_read(r for c in candidates for r in c.rules)
            )
        rules = tuple(_trace(rule, bound) for rule in config.rules)
        matched = [r.priority for r in rules if r.result is True]
        if not matched:
            traces.append(CandidateTrace(config.name, None, _unmatched(config), rules))
        else:
            traces.append(CandidateTrace(config.name, max(matched), None, rules))
    return tuple(traces)


def rule_warning(provider: str, condition: str, error: str) -> str:
    """The warning for a rule that could not be evaluated (admission and `explain` alike)."""
    return (
        f'InferenceProviderConfig {provider}: rule "{condition}" could not be evaluated and '
        f"counts as not matching: {error}"
    )


def trace_warnings(candidates: Sequence[CandidateTrace]) -> list[str]:
    """A warning for every rule of a full trace that could not be evaluated."""
    return [
        rule_warning(c.name, r.condition, r.error)
        for c in candidates
        for r in c.rules
        if r.error is not None
    ]


def _unmatched(config: ProviderConfig) -> str:
    if not config.rules:
        return "explicit-only: no selection rules"
    return "explicit-only here: no selection rule matched"


@dataclass(frozen=True, slots=True)
class _Wanted:
    """What a provider must offer to be a candidate: read from the object once per selection,
    not once per provider (each read walks the spec)."""

    engine: str
    gpu: bool
    mode: str
    renderable: Collection[str]  # the providers Runway has a plug-in for

    @classmethod
    def of(cls, md: ModelDeployment, registry: ProviderRegistry) -> _Wanted:
        return cls(md.engine_type, md.needs_gpu, md.serving_mode, registry.plugins.keys())


def _excluded(config: ProviderConfig, wanted: _Wanted) -> str | None:
    if config.name not in wanted.renderable:
        return f"no renderer for provider {config.name} in this Runway"
    if not config.ready:
        why = config.not_ready_reason
        return f"not ready (status.ready is false{': ' + why if why else ''})"
    mismatch = config.mismatch(wanted.engine, gpu=wanted.gpu, mode=wanted.mode)
    return None if mismatch is None else mismatch[1]


def _trace(rule: Rule, bound: Bound) -> RuleTrace:
    outcome = evaluate(rule, bound)
    result: bool | Literal["error"] = "error" if outcome.error is not None else outcome.matched
    return RuleTrace(rule.condition, rule.priority, result, outcome.error)
