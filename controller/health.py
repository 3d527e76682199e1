"""Provider health: each InferenceProviderConfig's status (core/status/providers.py) from the
CRDs installed and the Ready operator pods its `airunway.ai/health` annotation names.

One config's problem is that config's only. An annotation the core cannot read (a selector the
API server would refuse included) is its config's HealthAnnotationInvalid; a pod list the API
server refuses anyway (400, 403, ...) fails only the configs naming that (namespace, selector);
a status write it refuses fails only that config, logged at most once a minute. Only an API
server that cannot be reached at all (no answer) ends the pass, for every config alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kubernetes

from core.model.kinds import GROUP, INFERENCE_PROVIDER_CONFIG_PLURAL, VERSION
from core.status.providers import HealthSpec, Observed, health_spec, provider_status
from kubeio.client import failure
from kubeio.health import observe as observe_cluster
from kubeio.repeats import Repeats

TIME = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True, slots=True)
class HealthParts:
    api: kubernetes.client.ApiClient
    objects: kubernetes.client.CustomObjectsApi
    throttle: Repeats


def observe(parts: HealthParts, specs: Sequence[HealthSpec]) -> Observed:
    """kubeio.health.observe, each pod list the API server refused logged (rate-limited)."""
    observed = observe_cluster(parts.api, specs)
    for (namespace, selector), why in sorted(observed.failed.items()):
        parts.throttle.warning(f"pods in {namespace or '*'} by {selector!r}", why)
    return observed


def check_providers(
    parts: HealthParts,
    configs: Sequence[Mapping[str, Any]],
    now: dt.datetime,
    *,
    version: str,
    heartbeat: float,
) -> int:
    """Write each config's status when it changed or its heartbeat is older than `heartbeat`
    seconds; how many were written."""
    specs = {}
    for config in configs:
        annotations = (config.get("metadata") or {}).get("annotations") or {}
        specs[str(config["metadata"]["name"])] = health_spec(
            {str(k): str(v) for k, v in annotations.items()}
        )
    observed = observe(parts, [s for s in specs.values() if not isinstance(s, str)])
    written = 0
    for config in configs:
        name = str(config["metadata"]["name"])
        spec = specs[name]
        first = spec.crds[0] if not isinstance(spec, str) and spec.crds else None
        upstream = f"{first.name.split('.', 1)[-1]}/{first.version}" if first else "apps/v1"
        status = provider_status(
            config, observed, now=now.strftime(TIME), version=version, upstream=upstream
        )
        if not _stale(config.get("status"), status, now, heartbeat):
            continue
        try:
            parts.objects.replace_cluster_custom_object_status(
                GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL, name, {**config, "status": status}
            )
        except kubernetes.client.ApiException as err:
            if err.status in (404, 409):
                continue  # deleted or changed: the watch brings it, the next pass writes
            if err.status is None or err.status >= 500:
                raise
            parts.throttle.warning(f"InferenceProviderConfig {name} status", failure(err))
            continue
        parts.throttle.clear(f"InferenceProviderConfig {name} status")
        written += 1
    return written


def _stale(old: Any, new: Mapping[str, Any], now: dt.datetime, heartbeat: float) -> bool:
    """Whether `new` must be written over `old`: anything but the heartbeat differs, or the
    heartbeat is older than `heartbeat` seconds."""
    if not isinstance(old, Mapping):
        return True
    if {k: v for k, v in old.items() if k != "lastHeartbeat"} != {
        k: v for k, v in new.items() if k != "lastHeartbeat"
    }:
        return True
    try:
        beat = dt.datetime.strptime(str(old.get("lastHeartbeat")), TIME).replace(tzinfo=dt.UTC)
    except ValueError:
        return True
    return (now - beat).total_seconds() >= heartbeat
