"""The InferenceProviderConfigs that drive selection, with the provider plug-ins that render.

The edges build the registry (kubeio/registry.py) from the configs, the plug-ins listed in
providers/modules.py and the shipped flag catalogs; the core asks it, never a provider by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.cel.rules import (
    CONFIG_COST_LIMIT,
    Environment,
    Rule,
    compile_rule,
    fields_read,
    new_environment,
)
from core.checks.flags import FlagCatalog
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import (
    API_VERSION,
    INFERENCE_PROVIDER_CONFIG,
    InferenceProviderConfig,
    ModelDeployment,
)
from core.model.plugin import Provider, ProviderContext
from core.schema.crds import inference_provider_config_spec
from core.schema.structural import check_schema

MAX_RULES = 64  # selection rules per config (AI Runway's own configs have at most 4)
MAX_ANSWERS = 256  # answers a registry keeps (see ProviderRegistry.remember; a handful in use)
MAX_SPEC_BYTES = 128 * 1024  # a config's spec as compact JSON: 64 rules of 1 KiB, and engines


@dataclass(frozen=True, slots=True)
class EngineCapability:
    name: str
    serving_modes: frozenset[str]
    gpu: bool
    cpu: bool


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One loaded InferenceProviderConfig with its rules compiled once."""

    name: str
    ready: bool
    engines: Mapping[str, EngineCapability]
    rules: tuple[Rule, ...]
    obj: Mapping[str, Any] = field(repr=False)

    def mismatch(self, engine: str, *, gpu: bool, mode: str) -> tuple[str, str] | None:
        """None when this provider can run `engine` this way; else (spec field, why not)."""
        capability = self.engines.get(engine)
        if capability is None:
            offered = ", ".join(sorted(self.engines)) or "none"
            return "spec.engine.type", f"does not offer engine {engine} (offers: {offered})"
        if mode not in capability.serving_modes:
            return "spec.serving.mode", f"does not offer {mode} serving for engine {engine}"
        if gpu and not capability.gpu:
            return "spec.resources.gpu.count", f"does not run engine {engine} on GPUs"
        if not gpu and not capability.cpu:
            return "spec.resources.gpu.count", f"does not run engine {engine} without a GPU"
        return None

    @property
    def annotations(self) -> Mapping[str, str]:
        """The config's metadata.annotations with string values (settings for its plug-in)."""
        raw = (self.obj.get("metadata") or {}).get("annotations") or {}
        if not isinstance(raw, Mapping):
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, str)}

    @property
    def not_ready_reason(self) -> str:
        """Why the config is not ready, from its status's UpstreamReady condition ('' if none)."""
        status = self.obj.get("status")
        for entry in (status.get("conditions") if isinstance(status, Mapping) else None) or ():
            if isinstance(entry, Mapping) and entry.get("type") == "UpstreamReady":
                return str(entry.get("message") or "")
        return ""

    def gateway(self, engine: str) -> Mapping[str, Any]:
        """The engine's gateway capabilities (pool management, picker image/config, served name)."""
        for entry in InferenceProviderConfig(self.obj).engines:
            if entry.get("name") == engine and isinstance(entry.get("gateway"), Mapping):
                gateway: Mapping[str, Any] = entry["gateway"]
                return gateway
        return {}

    def supports(self, engine: str, *, gpu: bool, mode: str) -> bool:
        return self.mismatch(engine, gpu=gpu, mode=mode) is None


@dataclass(frozen=True, slots=True)
class SelectionOrder:
    """The rules of one set of candidates in the order admission evaluates them: priority, then
    provider name, then rule order (the first match wins, as no later rule can beat it)."""

    rules: tuple[tuple[Rule, str], ...]  # (rule, provider name)
    reads: frozenset[str] | None  # the top-level spec fields they read (core.cel.rules.fields_read)
    among: str  # the candidates with rules, as a selection's reason names them


@dataclass(frozen=True, slots=True)
class ProviderRegistry:
    """Provider configs by name (sorted), plus what was wrong with the ones that were skipped."""

    configs: Mapping[str, ProviderConfig]
    problems: tuple[str, ...] = ()
    env: Environment = field(default=None, repr=False, compare=False)  # the rules' CEL environment
    # The engine flag catalogs admission checks user flags against (the edges load the
    # shipped ones); a registry without them checks no flags.
    flags: Mapping[str, FlagCatalog] = field(default_factory=dict)
    # The provider plug-ins by name: the providers Runway can render.
    plugins: Mapping[str, Provider] = field(default_factory=dict)
    # What each provider's hooks are told (its config's annotations, its shipped facts), by name.
    contexts: Mapping[str, ProviderContext] = field(default_factory=dict)
    # Answers that depend on these configs and a few values alone, built on first use and
    # bounded by MAX_ANSWERS (see remember): each candidate set's SelectionOrder (sorting and
    # walking the rules was a tenth of an admission), core.selection.choice's engine choice
    # by provider, GPU and mode, the candidates' order by engine, GPU and mode, and the
    # provider choice by those and the rules' input. The registry is replaced when configs
    # change.
    answers: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[Mapping[str, Any]],
        *,
        plugins: Iterable[Provider],
        flags: Mapping[str, FlagCatalog] | None = None,
        facts: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ProviderRegistry:
        """Load InferenceProviderConfig dicts; a broken one is skipped and reported, not fatal.

        The same limits as at admission apply (rules per config, size, CEL cost), so a config
        that reached the cluster or a file some other way cannot stall selection either.
        """
        env = new_environment()
        configs: dict[str, ProviderConfig] = {}
        problems: list[str] = []
        for obj in objects:
            errors = config_errors(obj)
            name = InferenceProviderConfig(obj).name
            if errors:
                problems.append(
                    f"InferenceProviderConfig {name or '<unnamed>'} skipped: {errors[0]}"
                )
            elif name in configs:
                problems.append(
                    f"InferenceProviderConfig {name} defined twice; the first one is used"
                )
            else:
                config = _load(obj, env)
                over = cost_problem(config.rules)
                if over is not None:
                    problems.append(f"InferenceProviderConfig {name} skipped: {over}")
                else:
                    configs[name] = config
        for config in configs.values():
            problems.extend(
                f"InferenceProviderConfig {config.name} rule {i}: {rule.compile_error}"
                for i, rule in enumerate(config.rules)
                if rule.compile_error is not None
            )
        by_name = {plugin.name: plugin for plugin in plugins}
        known = dict(facts or {})
        contexts = {
            name: ProviderContext(
                name,
                dict(configs[name].annotations) if name in configs else {},
                dict(known.get(name) or {}),
            )
            for name in sorted(set(by_name) | set(configs))
        }
        return cls(
            dict(sorted(configs.items())),
            tuple(problems),
            env,
            dict(flags or {}),
            by_name,
            contexts,
        )

    def get(self, name: str) -> ProviderConfig | None:
        return self.configs.get(name)

    def selection_order(self, candidates: tuple[str, ...]) -> SelectionOrder:
        """The rules of `candidates` (config names, in registry order) in evaluation order."""
        key = ("order", *candidates)
        known: SelectionOrder | None = self.answers.get(key)
        if known is not None:
            return known
        configs = [self.configs[name] for name in candidates]
        rules = tuple(
            sorted(
                ((rule, config.name) for config in configs for rule in config.rules),
                key=lambda pair: (-pair[0].priority, pair[1]),  # stable: rule order within one
            )
        )
        order = SelectionOrder(
            rules, fields_read(r for r, _ in rules), ", ".join(c.name for c in configs if c.rules)
        )
        self.remember(key, order)
        return order

    def remember(self, key: tuple[Any, ...], answer: Any) -> None:
        """Keep `answer` in `answers` (emptied first when it holds MAX_ANSWERS: keys may come
        from objects, so they are not trusted to be few)."""
        if len(self.answers) >= MAX_ANSWERS:
            self.answers.clear()
        self.answers[key] = answer

    def plugin(self, name: str) -> Provider | None:
        """The plug-in that renders provider `name`, or None when Runway has none."""
        return self.plugins.get(name)

    def context(self, name: str) -> ProviderContext:
        """What provider `name`'s hooks are told: its config's annotations and its facts."""
        return self.contexts.get(name) or ProviderContext(name)

    def served_as(self, md: ModelDeployment) -> str | None:
        """The name `md`'s model server answers to when its operator decides it, else None."""
        plugin = self.plugins.get(md.provider_name)
        return plugin.rules.served_as(md, self.context(md.provider_name)) if plugin else None

    def runs_test_backend(self, md: ModelDeployment) -> bool:
        """`md`'s provider runs its test backend instead of an engine (no GPU, no gateway)."""
        plugin = self.plugins.get(md.provider_name)
        return plugin is not None and plugin.is_test_backend(md)

    def ready(self) -> Sequence[ProviderConfig]:
        """The configs that take part in automatic selection, in name order."""
        return [c for c in self.configs.values() if c.ready]


def config_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Structural errors of an InferenceProviderConfig (kind, name, spec shape)."""
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != INFERENCE_PROVIDER_CONFIG:
        expected = f"expected {API_VERSION} {INFERENCE_PROVIDER_CONFIG}"
        return [FieldError("kind", Reason.INVALID, expected)]
    limit = _limit_error(obj.get("spec"))
    if limit is not None:
        return [limit]  # checked before anything walks or compiles the object
    errors = []
    if not InferenceProviderConfig(obj).name:
        errors.append(FieldError("metadata.name", Reason.REQUIRED, "the provider's name"))
    spec_schema = inference_provider_config_spec()
    errors += check_schema(obj.get("spec", {}), spec_schema, FieldPath.root("spec"))
    return errors


def cost_problem(rules: Sequence[Rule]) -> str | None:
    """Why a config's usable rules together may cost too much per evaluation, or None."""
    total = sum(rule.cost for rule in rules if rule.compile_error is None)
    if total <= CONFIG_COST_LIMIT:
        return None
    return (
        f"the selection rules' estimated costs add up to {total:,}, over the limit of "
        f"{CONFIG_COST_LIMIT:,} per config"
    )


def _limit_error(spec: Any) -> FieldError | None:
    if not isinstance(spec, Mapping):
        return None  # the schema check reports it
    rules = spec.get("selectionRules")
    if isinstance(rules, Sequence) and not isinstance(rules, str) and len(rules) > MAX_RULES:
        detail = f"must have at most {MAX_RULES} items, has {len(rules)}"
        return FieldError("spec.selectionRules", Reason.TOO_MANY, detail)
    try:
        size = len(json.dumps(spec, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return None  # not JSON-shaped: the schema check names the field
    if size > MAX_SPEC_BYTES:
        detail = f"is {size:,} bytes as JSON; the limit is {MAX_SPEC_BYTES:,}"
        return FieldError("spec", Reason.TOO_LONG, detail)
    return None


def _load(obj: Mapping[str, Any], env: Environment) -> ProviderConfig:
    view = InferenceProviderConfig(obj)
    engines = {
        e["name"]: EngineCapability(
            name=e["name"],
            serving_modes=frozenset(e.get("servingModes") or ()),
            gpu=bool(e.get("gpuSupport")),
            cpu=bool(e.get("cpuSupport")),
        )
        for e in view.engines
    }
    rules = tuple(compile_rule(env, r["condition"], int(r.get("priority", 0))) for r in view.rules)
    return ProviderConfig(view.name, view.ready, engines, rules, obj)
