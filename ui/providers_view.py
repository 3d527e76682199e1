"""What the Providers page shows of each InferenceProviderConfig, from the very functions the
webhook and the status controller use:

- capabilities per engine (the config's spec, as the registry loads it);
- each selection rule compiled or refused with the reason: the registry's compile (the one CEL
  environment and limits the webhook uses, core.selection.configs.ProviderRegistry) and the
  admission verdict of the whole config (core.admission.configs.check_provider_config);
- readiness, in two parts shown apart: the config's own status (what the status controller
  last wrote in it) and the upstream operator as observed now (ui/providers_health.py), so a
  config whose status says ready while its operator is not is plain to see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.admission.configs import check_provider_config
from core.fields.errors import FieldError
from core.model.kinds import InferenceProviderConfig, dig
from core.selection.configs import ProviderRegistry

DISPLAY_NAME = "airunway.ai/display-name"
DESCRIPTION = "airunway.ai/description"


@dataclass(frozen=True, slots=True)
class EngineView:
    name: str
    modes: tuple[str, ...]
    formats: tuple[str, ...]
    gpu: bool
    cpu: bool


@dataclass(frozen=True, slots=True)
class RuleView:
    index: int
    condition: str
    priority: int
    compiled: bool
    reason: str  # why it was refused ('' when compiled)


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    since: str


@dataclass(frozen=True, slots=True)
class ConfigStatus:
    """The config's own readiness: whether Runway can use it (admission, registry) and what its
    status says (written by the status controller; none for a config from files)."""

    errors: tuple[FieldError, ...]  # admission's verdict on the config itself
    skipped: str  # why the registry left it out ('' when loaded)
    written: bool  # a status is present
    ready: bool  # status.ready (a config without status takes part in selection)
    heartbeat: str
    version: str
    conditions: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class ProviderView:
    name: str
    display: str
    description: str
    engines: tuple[EngineView, ...]
    rules: tuple[RuleView, ...]
    config: ConfigStatus
    obj: Mapping[str, Any]


def provider_views(
    objects: Sequence[Mapping[str, Any]], registry: ProviderRegistry
) -> list[ProviderView]:
    """One view per config, in name order (a config without a name is shown as '<unnamed>')."""
    views = [_view(obj, registry) for obj in objects]
    return sorted(views, key=lambda v: v.name)


def _view(obj: Mapping[str, Any], registry: ProviderRegistry) -> ProviderView:
    config = InferenceProviderConfig(obj)
    name = config.name or "<unnamed>"
    annotations = dig(obj, "metadata", "annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    return ProviderView(
        name=name,
        display=str(annotations.get(DISPLAY_NAME) or name),
        description=str(annotations.get(DESCRIPTION) or ""),
        engines=tuple(_engine(e) for e in config.engines),
        rules=_rules(obj, registry),
        config=_config_status(obj, registry, name),
        obj=obj,
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _engine(entry: Mapping[str, Any]) -> EngineView:
    return EngineView(
        name=str(entry.get("name") or ""),
        modes=_strings(entry.get("servingModes")),
        formats=_strings(entry.get("apiFormats")),
        gpu=entry.get("gpuSupport") is True,
        cpu=entry.get("cpuSupport") is True,
    )


def _rules(obj: Mapping[str, Any], registry: ProviderRegistry) -> tuple[RuleView, ...]:
    """Each rule as the registry compiled it; a config the registry skipped has its rules shown
    refused with the registry's reason (nothing of it is compiled or used)."""
    config = InferenceProviderConfig(obj)
    loaded = registry.get(config.name)
    if loaded is not None and loaded.obj is obj:
        return tuple(
            RuleView(i, r.condition, r.priority, r.compile_error is None, r.compile_error or "")
            for i, r in enumerate(loaded.rules)
        )
    why = _skipped(registry, config.name) or "the config is not loaded"
    return tuple(
        RuleView(i, str(r.get("condition") or ""), _priority(r), False, why)
        for i, r in enumerate(config.rules)
    )


def _priority(rule: Mapping[str, Any]) -> int:
    value = rule.get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _skipped(registry: ProviderRegistry, name: str) -> str:
    """The registry's reason for leaving the config out ('' when loaded; its rules' own compile
    errors are shown with each rule)."""
    prefix = f"InferenceProviderConfig {name} "
    return next(
        (
            p
            for p in registry.problems
            if p.startswith(prefix) and not p[len(prefix) :].startswith("rule ")
        ),
        "",
    )


def _config_status(obj: Mapping[str, Any], registry: ProviderRegistry, name: str) -> ConfigStatus:
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    conditions = status.get("conditions")
    return ConfigStatus(
        errors=tuple(check_provider_config(obj)),
        skipped=_skipped(registry, name),
        written=bool(status),
        ready=InferenceProviderConfig(obj).ready,
        heartbeat=str(status.get("lastHeartbeat") or ""),
        version=str(status.get("version") or ""),
        conditions=tuple(
            Condition(
                str(c.get("type") or ""),
                str(c.get("status") or ""),
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
                str(c.get("lastTransitionTime") or ""),
            )
            for c in (conditions if isinstance(conditions, list) else ())
            if isinstance(c, Mapping)
        ),
    )
