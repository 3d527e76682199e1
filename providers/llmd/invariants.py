"""llm-d: the invariants of a disaggregated model's own wiring, checked on every render beside
the core's (core/rendering/invariants.py): each role's pods labelled with their role,
NixlConnector in both roles' vLLM with the side channel on the pod IP, the decode pods' routing
sidecar forwarding to their vLLM, and a P/D picker configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.names import ROLE_SUFFIXES
from core.model.plugin import ProviderContext
from core.rendering.common import NIXL_CONNECTOR
from core.rendering.invariants import flag_value, kv_connector, ref
from providers.llmd.pods import PD_PROFILE_HANDLER, PDFacts, pd_facts, sidecar_flag_problems
from providers.llmd.render import NIXL_HOST_KEY


def invariants(
    md: ModelDeployment, objects: Sequence[Mapping[str, Any]], context: ProviderContext
) -> list[str]:
    """A disaggregated llm-d model has every piece P/D needs: each role's pods labelled with
    their role, NixlConnector in both roles' vLLM with the side channel on the pod IP, the
    decode pods' routing sidecar (run only with flags and a connector the pinned sidecar
    defines) forwarding to their vLLM, and a P/D picker configuration."""
    if not md.is_disaggregated:
        return []
    facts = pd_facts(context)
    problems: list[str] = []
    deployments = {
        str(dig(o, "spec", "template", "metadata", "labels", "app.kubernetes.io/component")): o
        for o in objects
        if o.get("kind") == "Deployment"
    }
    for role in ROLE_SUFFIXES:
        deployment = deployments.get(role)
        if deployment is None:
            problems.append(f"no {role} Deployment is rendered for a disaggregated model")
            continue
        problems += _role_problems(deployment, role, facts)
    prefill_filter = facts.filters["prefill"]
    for config_map in (o for o in objects if o.get("kind") == "ConfigMap"):
        data = str(dig(config_map, "data", "default-plugins.yaml") or "")
        if PD_PROFILE_HANDLER not in data or prefill_filter not in data:
            problems.append(
                f"{ref(config_map)} data.default-plugins.yaml has no {PD_PROFILE_HANDLER} with a "
                f"{prefill_filter} profile: the picker never sends a request to a prefill pod"
            )
    return problems


def _role_problems(deployment: Mapping[str, Any], role: str, facts: PDFacts) -> list[str]:
    problems: list[str] = []
    at = ref(deployment)
    pod = dig(deployment, "spec", "template") or {}
    labels = dig(pod, "metadata", "labels") or {}
    label = facts.role_label
    if labels.get(label) != facts.roles[role]:
        problems.append(
            f"{at} spec.template.metadata.labels.{label} is {labels.get(label)} but "
            f"the pods are {role} pods (the picker's {facts.filters[role]} selects on it)"
        )
    containers = list(dig(pod, "spec", "containers") or ())
    vllm = next((c for c in containers if c.get("name") == "vllm"), None)
    if vllm is None:
        return [*problems, f"{at} has no vllm container"]
    index = containers.index(vllm)
    args = [str(a) for a in vllm.get("args") or ()]
    connector = kv_connector(args)
    if connector != NIXL_CONNECTOR:
        problems.append(
            f"{at} spec.template.spec.containers[{index}].args --kv-transfer-config has "
            f"kv_connector {connector}, not {NIXL_CONNECTOR}"
        )
    host = next((e for e in vllm.get("env") or () if e.get("name") == NIXL_HOST_KEY), None)
    if host is None:
        problems.append(
            f"{at} spec.template.spec.containers[{index}].env has no {NIXL_HOST_KEY}: vLLM "
            "advertises the NIXL side channel on localhost, which the other role cannot reach"
        )
    if role == "decode":
        problems += _sidecar_problems(deployment, index, args, facts)
    return problems


def _sidecar_problems(
    deployment: Mapping[str, Any], index: int, args: Sequence[str], facts: PDFacts
) -> list[str]:
    at = ref(deployment)
    inits = list(dig(deployment, "spec", "template", "spec", "initContainers") or ())
    image = facts.sidecar_image
    sidecar = next((c for c in inits if str(c.get("image", "")).startswith(image + ":")), None)
    if sidecar is None:
        return [
            f"{at} spec.template.spec.initContainers has no routing sidecar ({image}): "
            "decode pods never ask a prefill pod for the KV cache"
        ]
    where = f"{at} spec.template.spec.initContainers[{inits.index(sidecar)}]"
    problems = []
    if sidecar.get("restartPolicy") != "Always":
        problems.append(f"{where}.restartPolicy is {sidecar.get('restartPolicy')}, not Always")
    sidecar_args = [str(a) for a in sidecar.get("args") or ()]
    forwards = flag_value(sidecar_args, ("--vllm-port", "-vllm-port"))
    listens = flag_value(args, ("--port",))
    if forwards != listens:
        problems.append(
            f"{where}.args --vllm-port is {forwards} but "
            f"spec.template.spec.containers[{index}].args --port is {listens}"
        )
    return problems + sidecar_flag_problems(sidecar_args, facts, f"{where}.args")
