"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split).

Disaggregated serving is wired as llm-d-inference-scheduler v<LLMD_VERSION> wires it
(deploy/components/vllm-sim-pd/deployments.yaml, test/sidecar/config/nixl/*.yaml):
  - pods carry llm-d.ai/role prefill or decode (pkg/plugins/filter/pd_role.go), which the
    picker's prefill-filter and decode-filter select on;
  - a decode pod runs the routing sidecar (cmd/pd-sidecar) as a native sidecar in front of vLLM:
    it listens on 8000, the pod's http port, asks the prefill pod the picker chose (the
    x-prefiller-host-port header) for the KV cache, and forwards to vLLM on 8200;
  - both roles run vLLM's NixlConnector with kv_role kv_both, as upstream's examples do, and
    advertise the NIXL side channel on the pod IP (vLLM defaults VLLM_NIXL_SIDE_CHANNEL_HOST to
    localhost, which the other pod cannot reach).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.names import ROLE_SUFFIXES, child_name
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    HTTP_PORT,
    NIXL_CONNECTOR,
    cache_env,
    container_resources,
    deployment_and_service,
    env,
    gpu_type,
    http_port,
    managed_claims,
    nixl_kv_transfer,
    pod_volumes,
    spec_overrides,
    vllm_args,
)
from core.rendering.invariants import flag_value, kv_connector, ref
from providers.llmd.pods import PD_PROFILE_HANDLER, PDFacts, pd_facts, sidecar_flag_problems


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One Deployment and Service (aggregated), or decode (primary) and prefill pairs, then a
    PersistentVolumeClaim per volume with a size."""
    facts = pd_facts(context)
    if not md.is_disaggregated:
        memory = md.spec.get("resources", {}).get("memory")
        replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
        return _pair(
            md,
            md.name,
            gpus=md.gpu_count,
            memory=memory,
            replicas=replicas,
            pins=pins,
            role=None,
            facts=facts,
        ) + managed_claims(md)
    objects: list[dict[str, Any]] = []
    for role in ROLE_SUFFIXES:
        part = dig(md.spec, "scaling", role) or {}
        gpus = int(dig(part, "gpu", "count") or 0)
        replicas = int(part.get("replicas", 1))
        name = child_name(md.name, role)
        objects += _pair(
            md,
            name,
            gpus=gpus,
            memory=part.get("memory"),
            replicas=replicas,
            pins=pins,
            role=role,
            facts=facts,
        )
    return objects + managed_claims(md)


DECODE_VLLM_PORT = 8200  # behind the routing sidecar, as upstream's decode pods
NIXL_HOST_KEY = "VLLM_NIXL_SIDE_CHANNEL_HOST"


def routing_sidecar(pins: Versions, facts: PDFacts) -> dict[str, Any]:
    """The decode pod's routing sidecar: a native sidecar (restartPolicy Always) that owns the
    pod's http port. --secure-proxy=false: Runway's pods serve plain HTTP inside the cluster
    (the sidecar's default is a self-signed TLS listener nothing else here expects)."""
    return {
        "name": "routing-sidecar",
        "image": f"{facts.sidecar_image}:v{pins.llmd}",
        "args": [
            f"--port={HTTP_PORT}",
            f"--vllm-port={DECODE_VLLM_PORT}",
            "--connector=nixlv2",
            "--secure-proxy=false",
        ],
        "ports": http_port(),
        "restartPolicy": "Always",
    }


def nixl_host_env() -> dict[str, Any]:
    return {
        "name": NIXL_HOST_KEY,
        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
    }


def _pair(
    md: ModelDeployment,
    name: str,
    *,
    gpus: int,
    memory: str | None,
    replicas: int,
    pins: Versions,
    role: str | None,
    facts: PDFacts,
) -> list[dict[str, Any]]:
    behind_sidecar = role == "decode"
    port = DECODE_VLLM_PORT if behind_sidecar else HTTP_PORT
    args = ["--port", str(port), *vllm_args(md, gpus=gpus, skip=frozenset({"port"}))]
    if role is not None:
        args += nixl_kv_transfer()
    volumes, mounts = pod_volumes(md, gpus=gpus)
    ports = (
        [{"name": "vllm", "containerPort": port, "protocol": "TCP"}]
        if behind_sidecar
        else http_port()
    )
    container: dict[str, Any] = {
        "name": "vllm",
        "image": md.image_override or f"vllm/vllm-openai:{pins.vllm}",
        "args": args,
        "ports": ports,
        "resources": container_resources(
            gpus=gpus,
            gpu_type=gpu_type(md),
            memory=memory,
            cpu=md.spec.get("resources", {}).get("cpu"),
        ),
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": ports[0]["name"]},
            "periodSeconds": 5,
        },
    }
    own = {e.get("name") for e in md.spec.get("env") or ()}
    nixl = [nixl_host_env()] if role is not None and NIXL_HOST_KEY not in own else []
    extra = cache_env(md) + nixl  # a user's own VLLM_NIXL_SIDE_CHANNEL_HOST wins
    variables = env(md, extra=extra)
    if variables:  # an empty list is dropped by the API server (omitempty): no drift
        container["env"] = variables
    if mounts:
        container["volumeMounts"] = mounts
    return deployment_and_service(
        md,
        name,
        container,
        replicas=replicas,
        volumes=volumes,
        component=role or "server",
        spec_overrides=spec_overrides(md),
        init_containers=[routing_sidecar(pins, facts)] if behind_sidecar else (),
        labels={facts.role_label: facts.roles[role]} if role is not None else None,
    )


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
