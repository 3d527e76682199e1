"""An InferenceProviderConfig's status: whether its provider can serve here.

What to check is the config's `airunway.ai/health` annotation, AI Runway's format (JSON):
`{"crds": [{"name": "<plural>.<group>", "version": "<served version>"}], "operatorPods":
[{"namespace": "<ns>", "selectors": ["<label selector>", ...]}]}`. The provider is ready when
every CRD is installed and serves its version, and every operatorPods entry has a Ready pod
matching one of its selectors. A config without the annotation has nothing to check (llm-d and
Direct vLLM render only built-in kinds) and is ready.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.status.conditions import condition
from core.status.selectors import problem

HEALTH_ANNOTATION = "airunway.ai/health"
MAX_HEALTH_BYTES = 4096
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a DNS label, at most 63


@dataclass(frozen=True, slots=True)
class CRDCheck:
    name: str
    version: str


@dataclass(frozen=True, slots=True)
class PodCheck:
    namespace: str  # "" : every namespace
    selectors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HealthSpec:
    crds: tuple[CRDCheck, ...] = ()
    pods: tuple[PodCheck, ...] = ()


@dataclass(frozen=True, slots=True)
class Observed:
    """What the cluster holds: the served versions of each CRD by name (absent: not
    installed), and the Ready pods per (namespace, selector)."""

    crds: Mapping[str, tuple[str, ...]]
    ready_pods: Mapping[tuple[str, str], int]
    # (namespace, selector) pairs whose pods could not be listed, and why: a failure of the
    # configs that name them only
    failed: Mapping[tuple[str, str], str] = field(default_factory=dict)


def health_spec(annotations: Mapping[str, str]) -> HealthSpec | str:
    """The checks the annotation names, or why it cannot be read."""
    text = annotations.get(HEALTH_ANNOTATION)
    if text is None:
        return HealthSpec()
    if len(text) > MAX_HEALTH_BYTES:
        return f"{HEALTH_ANNOTATION} is longer than {MAX_HEALTH_BYTES} bytes"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return f"{HEALTH_ANNOTATION} is not JSON: {err.msg} at character {err.pos}"
    except RecursionError:
        return f"{HEALTH_ANNOTATION} nests too deeply"
    if not isinstance(data, Mapping):
        return f"{HEALTH_ANNOTATION} must be a JSON object"
    crds, pods = data.get("crds") or [], data.get("operatorPods") or []
    if not isinstance(crds, list) or not isinstance(pods, list):
        return f"{HEALTH_ANNOTATION}: crds and operatorPods must be lists"
    out_crds, out_pods = [], []
    for i, crd in enumerate(crds):
        if not isinstance(crd, Mapping) or not isinstance(crd.get("name"), str):
            return f"{HEALTH_ANNOTATION}: crds[{i}].name must be a string"
        out_crds.append(CRDCheck(crd["name"], str(crd.get("version") or "")))
    for i, entry in enumerate(pods):
        selectors = entry.get("selectors") if isinstance(entry, Mapping) else None
        if not isinstance(selectors, list) or not all(isinstance(s, str) for s in selectors):
            return f"{HEALTH_ANNOTATION}: operatorPods[{i}].selectors must be a list of strings"
        namespace = entry.get("namespace") or ""
        if not isinstance(namespace, str) or (
            namespace and not (len(namespace) <= 63 and _NAMESPACE.fullmatch(namespace))
        ):
            return f"{HEALTH_ANNOTATION}: operatorPods[{i}].namespace must be a namespace name"
        for j, selector in enumerate(selectors):
            why = problem(selector)
            if why is not None:
                return (
                    f"{HEALTH_ANNOTATION}: operatorPods[{i}].selectors[{j}] is not a label "
                    f"selector the API server accepts: {why}"
                )
        out_pods.append(PodCheck(namespace, tuple(selectors)))
    return HealthSpec(tuple(out_crds), tuple(out_pods))


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
