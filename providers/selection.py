"""Engine and provider selection, with a trace of every candidate and rule.

Engine: over the ready providers (or only the explicitly named one), keep the engines each offers
for this GPU/CPU placement and serving mode, then take the first in the order vllm > sglang >
trtllm > llamacpp. Provider: over the ready providers that can run the engine this way, a
provider's priority is its highest matching rule; the highest priority wins, ties break by name.
A provider with no rules, or none matching, is explicit-only: never selected automatically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from providers.cel import activation, evaluate
from providers.errors import FieldError, Reason
from providers.model import ENGINE_PREFERENCE, Choice, ModelDeployment
from providers.registry import MODULES, ProviderConfig, ProviderRegistry


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
    """Automatic engine choice for an object whose spec.engine.type is empty."""
    named = registry.get(explicit_provider) if explicit_provider else None
    pool = [named] if named is not None else [c for c in registry.ready() if c.name in MODULES]
    gpu, mode = md.needs_gpu, md.serving_mode
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


def rank_providers(
    spec: Mapping[str, Any], md: ModelDeployment, registry: ProviderRegistry
) -> tuple[CandidateTrace, ...]:
    """Every configured provider with its priority, or the reason it cannot be auto-selected."""
    bound: dict[str, Any] | None = None
    traces: list[CandidateTrace] = []
    for config in registry.configs.values():
        excluded = _excluded(config, md)
        if excluded is not None:
            traces.append(CandidateTrace(config.name, None, excluded, ()))
            continue
        if bound is None:
            bound = activation(spec)
        rules = tuple(_trace(rule_index, config, bound) for rule_index in range(len(config.rules)))
        matched = [r.priority for r in rules if r.result is True]
        if not config.rules:
            traces.append(
                CandidateTrace(config.name, None, "explicit-only: no selection rules", rules)
            )
        elif not matched:
            reason = "explicit-only here: no selection rule matched"
            traces.append(CandidateTrace(config.name, None, reason, rules))
        else:
            traces.append(CandidateTrace(config.name, max(matched), None, rules))
    return tuple(traces)


def choose_provider(candidates: Sequence[CandidateTrace]) -> Decision | FieldError:
    """The winner of a ranking: highest priority, ties broken by the smallest name."""
    ranked = sorted(
        (c for c in candidates if c.priority is not None),
        key=lambda c: (-(c.priority or 0), c.name),
    )
    if not ranked:
        why = "; ".join(f"{c.name}: {c.excluded}" for c in candidates) or "no providers configured"
        detail = f"no provider can be selected automatically ({why}); set spec.provider.name"
        return FieldError("spec.provider.name", Reason.REQUIRED, detail)
    winner = ranked[0]
    rule = next(r for r in winner.rules if r.result is True and r.priority == winner.priority)
    ranking = ", ".join(f"{c.name}={c.priority}" for c in ranked)
    reason = (
        f'auto-selected: rule "{rule.condition}" matched at priority {winner.priority}; '
        f"ranking: {ranking} (ties break by name)"
    )
    return Decision(winner.name, reason, Choice.AUTO)


def _excluded(config: ProviderConfig, md: ModelDeployment) -> str | None:
    if config.name not in MODULES:
        return f"no renderer for provider {config.name} in this Runway"
    if not config.ready:
        return "not ready (status.ready is false)"
    mismatch = config.mismatch(md.engine_type, gpu=md.needs_gpu, mode=md.serving_mode)
    return None if mismatch is None else mismatch[1]


def _trace(index: int, config: ProviderConfig, bound: Mapping[str, Any]) -> RuleTrace:
    rule = config.rules[index]
    outcome = evaluate(rule, bound)
    result: bool | Literal["error"] = "error" if outcome.error is not None else outcome.matched
    return RuleTrace(rule.condition, rule.priority, result, outcome.error)
