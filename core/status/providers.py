"""An InferenceProviderConfig's status: whether its provider can serve here.

What to check is the config's `airunway.ai/health` annotation, AI Runway's format (JSON):
`{"crds": [{"name": "<plural>.<group>", "version": "<served version>"}], "operatorPods":
[{"namespace": "<ns>", "selectors": ["<label selector>", ...]}]}`. The provider is ready when
every CRD is installed and serves its version, and every operatorPods entry has a Ready pod
matching one of its selectors. A config without the annotation has nothing to check (llm-d and
Direct vLLM render only built-in kinds) and is ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.checks.health import HEALTH_ANNOTATION, CRDCheck, HealthSpec, PodCheck, health_spec
from core.status.conditions import condition

__all__ = [  # the annotation's parts moved to core/checks/health.py; read from here too
    "HEALTH_ANNOTATION",
    "CRDCheck",
    "HealthSpec",
    "Observed",
    "PodCheck",
    "health_spec",
    "pod_checks",
    "provider_status",
]


@dataclass(frozen=True, slots=True)
class Observed:
    """What the cluster holds: the served versions of each CRD by name (absent: not
    installed), and the Ready pods per (namespace, selector)."""

    crds: Mapping[str, tuple[str, ...]]
    ready_pods: Mapping[tuple[str, str], int]
    # (namespace, selector) pairs whose pods could not be listed, and why: a failure of the
    # configs that name them only
    failed: Mapping[tuple[str, str], str] = field(default_factory=dict)


def _problems(spec: HealthSpec, observed: Observed) -> list[tuple[str, str]]:
    """(reason, message) for every check that fails."""
    out = []
    for crd in spec.crds:
        served = observed.crds.get(crd.name)
        if served is None:
            out.append(("CRDMissing", f"CRD {crd.name} is not installed"))
        elif crd.version and crd.version not in served:
            have = ", ".join(served) or "none"
            out.append(
                (
                    "CRDVersionNotServed",
                    f"CRD {crd.name} does not serve {crd.version} (serves {have})",
                )
            )
    for pods in spec.pods:
        failed = [
            (s, observed.failed[(pods.namespace, s)])
            for s in pods.selectors
            if (pods.namespace, s) in observed.failed
        ]
        if failed:
            where = pods.namespace or "every namespace"
            selector, why = failed[0]
            out.append(
                (
                    "OperatorCheckFailed",
                    f"pods in {where} could not be listed by {selector!r}: {why}",
                )
            )
            continue
        if not any(observed.ready_pods.get((pods.namespace, s), 0) for s in pods.selectors):
            where = pods.namespace or "any namespace"
            out.append(
                (
                    "OperatorNotReady",
                    f"no Ready operator pod in {where} matches {' or '.join(pods.selectors)}",
                )
            )
    return out


def provider_status(
    config: Mapping[str, Any],
    observed: Observed,
    *,
    now: str,
    version: str,
    upstream: str,
) -> dict[str, Any]:
    """The status to write for `config` (stored, status included): ready, version,
    lastHeartbeat, upstreamCRDVersion and an UpstreamReady condition saying why not."""
    annotations = (config.get("metadata") or {}).get("annotations") or {}
    previous = config.get("status") if isinstance(config.get("status"), Mapping) else None
    spec = health_spec({str(k): str(v) for k, v in annotations.items()})
    if isinstance(spec, str):
        problems = [("HealthAnnotationInvalid", spec)]
    else:
        problems = _problems(spec, observed)
    ready = not problems
    reason, message = (
        ("UpstreamReady", "every CRD and operator pod it needs is there") if ready else problems[0]
    )
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more: {'; '.join(m for _, m in problems[1:])})"
    return {
        "ready": ready,
        "version": version,
        "lastHeartbeat": now,
        "upstreamCRDVersion": upstream,
        "conditions": [
            condition(
                "UpstreamReady", ready, reason, message, now=now, generation=None, previous=previous
            )
        ],
    }


def pod_checks(specs: Sequence[HealthSpec]) -> list[tuple[str, str]]:
    """The distinct (namespace, selector) pairs to count Ready pods for."""
    return sorted({(p.namespace, s) for spec in specs for p in spec.pods for s in p.selectors})
