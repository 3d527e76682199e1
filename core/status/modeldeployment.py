"""A ModelDeployment's whole status, from its provider's Workload and its gateway objects' state.

kstatus-compatible: `observedGeneration` is the generation this status describes, and the
abnormal-true conditions kstatus reads are present only while they hold: `Reconciling` while the
model is Pending or Deploying, `Stalled` once it is Failed (so Flux's wait, through kstatus,
calls it Current only when it serves). `Ready` and the conditions AI Runway users read
(Validated, EngineSelected, ProviderSelected, ResourceCreated, GatewayReady) are always written.
A condition keeps its lastTransitionTime while its status stays the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.model.kinds import (
    ANNOTATION_ENGINE_REASON,
    ANNOTATION_ENGINE_SELECTION,
    ANNOTATION_PROVIDER_REASON,
    ANNOTATION_PROVIDER_SELECTION,
    Choice,
    ModelDeployment,
    dig,
)
from core.model.plugin import Workload
from core.status.conditions import bounded, condition
from core.status.incompatible import INCOMPATIBLE_UPSTREAM
from core.status.workloads import DEPLOYING, FAILED, PENDING, RUNNING, list_at, replicas

TERMINATING = "Terminating"
PHASES = (PENDING, DEPLOYING, RUNNING, FAILED, TERMINATING)


@dataclass(frozen=True, slots=True)
class GatewayState:
    """The gateway objects' state for a ModelDeployment whose gateway is enabled: whether the
    InferencePool and HTTPRoute are accepted (reason and message say why not), the endpoint
    clients call and the model name they send."""

    ready: bool
    reason: str
    message: str
    endpoint: str
    model_name: str


def _selection(md: ModelDeployment, what: str) -> tuple[str, str]:
    """(condition reason, selectedReason) of the stamped engine or provider choice."""
    keys = {
        "engine": (ANNOTATION_ENGINE_SELECTION, ANNOTATION_ENGINE_REASON),
        "provider": (ANNOTATION_PROVIDER_SELECTION, ANNOTATION_PROVIDER_REASON),
    }[what]
    choice, reason = md.annotations.get(keys[0]), md.annotations.get(keys[1]) or ""
    if choice == Choice.AUTO:
        return "AutoSelected", reason
    return "ExplicitSelection", reason or f"{what} explicitly specified in spec"


def model_deployment_status(
    md: ModelDeployment,
    workload: Workload,
    *,
    gateway: GatewayState | None,
    now: str,
) -> dict[str, Any]:
    """The status to write for `md` (its stored object, status included, which this replaces):
    phase, message, replicas, endpoint, provider, engine, gateway and conditions, for the
    generation it has now. `now` is an RFC 3339 time for conditions that change."""
    previous = md.obj.get("status") if isinstance(md.obj.get("status"), Mapping) else None
    generation = dig(md.obj, "metadata", "generation")
    generation = generation if isinstance(generation, int) else None
    terminating = bool(dig(md.obj, "metadata", "deletionTimestamp"))
    phase = TERMINATING if terminating else workload.phase
    serving = phase == RUNNING and (gateway is None or gateway.ready)
    message = workload.message
    if phase == RUNNING and gateway is not None and not gateway.ready:
        message = f"{workload.message}; the gateway does not route yet: {gateway.message}"

    def cond(kind: str, status: bool, reason: str, text: str) -> dict[str, Any]:
        return condition(
            kind, status, reason, text, now=now, generation=generation, previous=previous
        )

    engine_reason, engine_why = _selection(md, "engine")
    provider_reason, provider_why = _selection(md, "provider")
    conditions = [
        cond("Validated", True, "ValidationPassed", "admitted by the Runway webhook"),
        cond("EngineSelected", True, engine_reason, engine_why),
        cond("ProviderSelected", True, provider_reason, provider_why),
        cond(
            "ResourceCreated",
            workload.created,
            "ResourceCreated"
            if workload.created
            else (
                INCOMPATIBLE_UPSTREAM if workload.reason == INCOMPATIBLE_UPSTREAM else "NotCreated"
            ),
            "the upstream objects exist" if workload.created else workload.message,
        ),
        cond("Ready", serving, "Serving" if serving else workload.reason, message),
    ]
    if gateway is not None:
        conditions.append(cond("GatewayReady", gateway.ready, gateway.reason, gateway.message))
    if phase in (PENDING, DEPLOYING) or (phase == RUNNING and not serving):
        conditions.append(cond("Reconciling", True, workload.reason, message))
    if phase == FAILED:
        conditions.append(cond("Stalled", True, workload.reason, message))
    status: dict[str, Any] = {
        "phase": phase,
        "message": bounded(message),
        "provider": {"name": md.provider_name, "selectedReason": bounded(provider_why)},
        "engine": {"type": md.engine_type, "selectedReason": bounded(engine_why)},
        # clamped to the schema's int32: one upstream sum past it would fail the whole write
        "replicas": {
            "desired": replicas(workload.desired),
            "ready": replicas(workload.ready),
            "available": replicas(workload.available),
        },
        "conditions": conditions,
    }
    if workload.service:
        status["endpoint"] = {"service": workload.service, "port": workload.port}
    if gateway is not None:
        status["gateway"] = {"endpoint": gateway.endpoint, "modelName": gateway.model_name}
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def _accepted(obj: Mapping[str, Any] | None, types: tuple[str, ...]) -> str | None:
    """None when every parent of a Gateway API object (status.parents[].conditions) reports
    each of `types` True; else why not."""
    if obj is None:
        return "does not exist yet"
    parents = [p for p in list_at(obj, "status", "parents") if isinstance(p, Mapping)]
    if not parents:
        return "has no parent status yet (no gateway controller has accepted it)"
    for parent in parents:
        found = {c.get("type"): c for c in list_at(parent, "conditions") if isinstance(c, Mapping)}
        for kind in types:
            entry = found.get(kind)
            if entry is None or entry.get("status") != "True":
                reason = (entry or {}).get("reason") or "no condition"
                return f"is not {kind} ({reason})"
    return None


def gateway_state(
    md: ModelDeployment,
    observed: Mapping[str, Mapping[str, Any]],
    *,
    pool_is_runways: bool,
    endpoint: str,
    model_name: str,
) -> GatewayState:
    """The state of `md`'s InferencePool (when Runway renders it) and HTTPRoute (unless the user
    routes with spec.gateway.httpRouteRef), read from their status.parents conditions."""
    checks = []
    if pool_is_runways:
        checks.append((f"InferencePool/{md.name}", ("Accepted", "ResolvedRefs")))
    if not dig(md.spec, "gateway", "httpRouteRef"):
        checks.append((f"HTTPRoute/{md.name}", ("Accepted", "ResolvedRefs")))
    for ref, types in checks:
        why = _accepted(observed.get(ref), types)
        if why is not None:
            reason = "NotCreated" if why == "does not exist yet" else "NotAccepted"
            return GatewayState(False, reason, f"{ref} {why}", endpoint, model_name)
    return GatewayState(
        True, "GatewayConfigured", "InferencePool and HTTPRoute accepted", endpoint, model_name
    )
