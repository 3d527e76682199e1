"""The upstream operator of each InferenceProviderConfig, observed now (live mode): the CRDs its
`airunway.ai/health` annotation names (installed, serving the version) and its operator pods
(a Ready pod matching a selector). These are cluster facts, not a tenant's, so they are read with
the portal's own client (kustomize/ui grants list on CRDs and pods).

The verdict is the status controller's own function (core.status.providers.provider_status) over
what was observed, so the page and the controller never disagree on what "ready" means; the
page also lists each check on its own. It observes as the controller does (kubeio.health).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kubernetes

from core.checks.health import HealthSpec, health_spec
from core.status.providers import Observed, provider_status
from kubeio.client import api_failure
from kubeio.health import observe
from ui.cluster import TIMEOUT


@dataclass(frozen=True, slots=True)
class Check:
    what: str  # "CRD workspaces.kaito.sh v1beta1", "operator pods in any namespace"
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class OperatorStatus:
    """The upstream operator as observed now; `problem` says why it could not be."""

    ready: bool = False
    reason: str = ""
    message: str = ""
    checks: tuple[Check, ...] = ()
    problem: str = ""


def spec_of(config: Mapping[str, Any]) -> HealthSpec | str:
    annotations = (config.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, Mapping):
        return HealthSpec()
    return health_spec({str(k): str(v) for k, v in annotations.items()})


def operator_statuses(
    client: kubernetes.client.ApiClient, configs: Sequence[Mapping[str, Any]]
) -> dict[str, OperatorStatus]:
    """Each config's operator status by config name; every one carries the same `problem` when
    the API server could not be asked."""
    specs = {_name(c): spec_of(c) for c in configs}
    try:
        observed = observe(
            client, [s for s in specs.values() if not isinstance(s, str)], timeout=TIMEOUT
        )
    except Exception as err:
        failure = api_failure(err)
        if failure is None:
            raise
        return {name: OperatorStatus(problem=failure) for name in specs}
    return {_name(c): operator_status(c, specs[_name(c)], observed) for c in configs}


def _name(config: Mapping[str, Any]) -> str:
    return str((config.get("metadata") or {}).get("name") or "")


def operator_status(
    config: Mapping[str, Any], spec: HealthSpec | str, observed: Observed
) -> OperatorStatus:
    status = provider_status(config, observed, now="", version="", upstream="")
    first = status["conditions"][0]
    checks = () if isinstance(spec, str) else checks_of(spec, observed)
    return OperatorStatus(
        ready=bool(status["ready"]),
        reason=str(first["reason"]),
        message=str(first["message"]),
        checks=checks,
    )


def checks_of(spec: HealthSpec, observed: Observed) -> tuple[Check, ...]:
    """Every check of the annotation on its own line."""
    out = []
    for crd in spec.crds:
        served = observed.crds.get(crd.name)
        what = f"CRD {crd.name}" + (f" {crd.version}" if crd.version else "")
        if served is None:
            out.append(Check(what, False, "not installed"))
        elif crd.version and crd.version not in served:
            out.append(Check(what, False, f"serves {', '.join(served) or 'no version'}"))
        else:
            out.append(Check(what, True, f"installed, serves {', '.join(served)}"))
    for pods in spec.pods:
        where = pods.namespace or "any namespace"
        counts = []
        for selector in pods.selectors:
            failed = observed.failed.get((pods.namespace, selector))
            count = observed.ready_pods.get((pods.namespace, selector), 0)
            counts.append(
                f"{selector}: " + (f"not listed ({failed})" if failed else f"{count} Ready")
            )
        ok = any(observed.ready_pods.get((pods.namespace, s), 0) for s in pods.selectors)
        out.append(Check(f"operator pods in {where}", ok, "; ".join(counts)))
    return tuple(out)
