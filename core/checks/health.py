"""The `airunway.ai/health` annotation of an InferenceProviderConfig, read the same way by
admission (core/admission/configs.py denies one that cannot be read) and the status controller
(core/status/providers.py checks what it names).

AI Runway's format (JSON): `{"crds": [{"name": "<plural>.<group>", "version": "<served
version>"}], "operatorPods": [{"namespace": "<ns>", "selectors": ["<label selector>", ...]}]}`.
Every selector must be one the API server accepts (core/checks/labelselectors.py), every
namespace a namespace name: the controller lists pods with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from core.checks.labelselectors import problem

HEALTH_ANNOTATION = "airunway.ai/health"
MAX_HEALTH_BYTES = 4096
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a DNS label, at most 63


@dataclass(frozen=True, slots=True)
class CRDCheck:
    """A CRD the provider's operator needs: its name, and the version it must serve ("": any)."""

    name: str
    version: str


@dataclass(frozen=True, slots=True)
class PodCheck:
    """Operator pods that must be running: where, and the label selectors that find them."""

    namespace: str  # "" : every namespace
    selectors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HealthSpec:
    crds: tuple[CRDCheck, ...] = ()
    pods: tuple[PodCheck, ...] = ()


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
