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

from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.names import ROLE_SUFFIXES, child_name
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import HTTP_PORT, http_port, managed_claims, nixl_kv_transfer
from core.rendering.engines import vllm_deployment
from core.rendering.leaderworkerset import is_multinode, leaderworkerset_and_service
from providers.llmd.pods import PDFacts, pd_facts


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One Deployment and Service (aggregated; a LeaderWorkerSet and the Service of its leaders
    across nodes), or decode (primary) and prefill pairs, then a PersistentVolumeClaim per volume
    with a size. A disaggregated model across nodes is refused at admission (providers/llmd/
    pods.py multinode_checks)."""
    facts = pd_facts(context)
    if not md.is_disaggregated:
        memory = md.spec.get("resources", {}).get("memory")
        replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
        if is_multinode(md):
            return leaderworkerset_and_service(
                md, md.name, pins, gpus=md.gpu_count, memory=memory, replicas=replicas
            ) + managed_claims(md)
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
        "image": f"{facts.sidecar_image}:v{pins.pin('llmd')}",
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
    own = {e.get("name") for e in md.spec.get("env") or ()}
    # A user's own VLLM_NIXL_SIDE_CHANNEL_HOST wins.
    nixl = [nixl_host_env()] if role is not None and NIXL_HOST_KEY not in own else []
    return vllm_deployment(
        md,
        name,
        pins,
        gpus=gpus,
        memory=memory,
        replicas=replicas,
        port=DECODE_VLLM_PORT if behind_sidecar else HTTP_PORT,
        port_name="vllm" if behind_sidecar else "http",
        extra_args=nixl_kv_transfer() if role is not None else (),
        extra_env=nixl,
        component=role or "server",
        init_containers=[routing_sidecar(pins, facts)] if behind_sidecar else (),
        labels={facts.role_label: facts.roles[role]} if role is not None else None,
    )
