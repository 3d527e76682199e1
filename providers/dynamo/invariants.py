"""NVIDIA Dynamo: where a DynamoGraphDeployment's serving containers are (its worker services,
for the core's GPU and served-name invariants), and the invariants of its own wiring: its
claims, its disaggregated workers' roles and transfer, its frontends' routing and its KV
events."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ProviderContext, Server
from core.rendering.common import NIXL_CONNECTOR, claim_name
from core.rendering.invariants import flag_value, kv_connector, ref
from providers.dynamo.render import (
    KV_EVENTS,
    SGLANG_TRANSFER_BACKEND,
    TRTLLM_DISAGG,
    TRTLLM_OVERRIDES,
    is_test_backend,
    kv_routed,
)

KIND = "DynamoGraphDeployment"


def serving_containers(obj: Mapping[str, Any]) -> list[Server]:
    """The worker services' main containers of a graph, with the GPUs each service asks for
    and the nodes (pods) one of its replicas spans."""
    out: list[Server] = []
    if obj.get("kind") != KIND:
        return out
    for key, service in sorted((dig(obj, "spec", "services") or {}).items()):
        if service.get("componentType") == "worker":
            container = dig(service, "extraPodSpec", "mainContainer") or {}
            path = f"spec.services.{key}.extraPodSpec.mainContainer"
            gpus = int(dig(service, "resources", "limits", "gpu") or 0)
            at = f"spec.services.{key}.resources.limits.gpu"
            # a multinode service: each replica spans nodeCount pods of `gpus` GPUs each
            nodes = int(dig(service, "multinode", "nodeCount") or 1)
            out.append(Server(obj, path, container, {}, gpus, at, nodes=nodes))
    return out


def invariants(
    md: ModelDeployment, objects: Sequence[Mapping[str, Any]], context: ProviderContext
) -> list[str]:
    """A disaggregated graph's workers run their role with the transfer their engine needs
    (vLLM: NixlConnector; SGLang: a transfer backend that does not need RDMA); behind a gateway
    every worker's frontend honours the picker's choice (--router-mode direct); under a KV
    router every worker publishes KV events."""
    problems = _claims(md, objects)
    for graph in (o for o in objects if o.get("kind") == KIND):
        engine = str(dig(graph, "spec", "backendFramework") or "")
        for key, service in sorted((dig(graph, "spec", "services") or {}).items()):
            if service.get("componentType") != "worker" or is_test_backend(md):
                continue
            at = f"{ref(graph)} spec.services.{key}"
            args = [str(a) for a in dig(service, "extraPodSpec", "mainContainer", "args") or ()]
            problems += _worker_problems(md, engine, service, at, args)
            sidecar = service.get("frontendSidecar")
            if sidecar is not None:
                mode = flag_value([str(a) for a in sidecar.get("args") or ()], ("--router-mode",))
                if mode != "direct":
                    problems.append(
                        f"{at}.frontendSidecar.args --router-mode is {mode or 'unset (round-robin)'}"
                        ": the frontend would choose a worker again instead of the picker's"
                    )
    return problems


def _worker_problems(
    md: ModelDeployment, engine: str, service: Mapping[str, Any], at: str, args: Sequence[str]
) -> list[str]:
    problems: list[str] = []
    role = service.get("subComponentType")
    where = f"{at}.extraPodSpec.mainContainer.args"
    if md.is_disaggregated:
        mode = flag_value(args, ("--disaggregation-mode",))
        if mode != role:
            problems.append(f"{where} --disaggregation-mode is {mode} but the worker is {role}")
        if engine == "sglang":
            backend = flag_value(args, (SGLANG_TRANSFER_BACKEND,))
            if backend in (None, "mooncake"):
                problems.append(
                    f"{where} {SGLANG_TRANSFER_BACKEND} is {backend or 'unset (mooncake)'}: "
                    "SGLang's mooncake backend needs RDMA"
                )
        if engine == "vllm" and kv_connector(args) != NIXL_CONNECTOR:
            problems.append(f"{where} --kv-transfer-config names no {NIXL_CONNECTOR}")
        if engine == "trtllm":
            problems += _trtllm_disagg(str(role), args, where)
    if kv_routed(md) and engine in KV_EVENTS and KV_EVENTS[engine][0] not in args:
        problems.append(
            f"{where} has no {KV_EVENTS[engine][0]}: the worker publishes no KV events, so "
            "the KV router routes blind"
        )
    return problems


def _trtllm_disagg(role: str, args: Sequence[str], where: str) -> list[str]:
    """A disaggregated TRT-LLM worker's engine arguments carry what its role needs (render.py
    TRTLLM_DISAGG): without a cache transceiver the KV cache is never handed over."""
    raw = flag_value(args, (TRTLLM_OVERRIDES,))
    try:
        given = json.loads(raw) if raw is not None else {}
    except ValueError:
        given = None
    if not isinstance(given, dict):
        return [f"{where} {TRTLLM_OVERRIDES} is not a JSON object"]
    needed = TRTLLM_DISAGG.get(role, {})
    missing = sorted(
        k for k, v in needed.items() if k not in given or (v is True and given[k] is not True)
    )
    if not missing:
        return []
    return [
        f"{where} {TRTLLM_OVERRIDES} lacks {', '.join(missing)}: a {role} TRT-LLM worker needs "
        f"{json.dumps(dict(needed), sort_keys=True)}"
    ]


def _claims(md: ModelDeployment, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every claim a graph mounts is rendered, created by the graph, or declared pre-existing (a
    volume without a size), and a claim the graph creates is not rendered too."""
    declared = {claim_name(md, v) for v in md.volumes if v.get("size") is None}
    rendered = {
        str(dig(o, "metadata", "name")) for o in objects if o.get("kind") == "PersistentVolumeClaim"
    }
    problems: list[str] = []
    for obj in (o for o in objects if o.get("kind") == KIND):
        pvcs = dig(obj, "spec", "pvcs") or ()
        created = {p["name"] for p in pvcs if p.get("create") is True}
        listed = {p["name"] for p in pvcs}
        for i, pvc in enumerate(pvcs):
            name = pvc["name"]
            if not pvc.get("create") and name not in rendered | declared:
                problems.append(
                    f"{ref(obj)} spec.pvcs[{i}] refers to claim {name} with create false, "
                    "which is neither rendered (PersistentVolumeClaim) nor declared pre-existing"
                )
            if name in created and name in rendered:
                problems.append(
                    f"{ref(obj)} spec.pvcs[{i}] creates claim {name} and "
                    f"PersistentVolumeClaim/{name} is rendered too"
                )
        for key, service in sorted((dig(obj, "spec", "services") or {}).items()):
            for i, mount in enumerate(service.get("volumeMounts") or ()):
                if mount.get("name") not in listed:
                    problems.append(
                        f"{ref(obj)} spec.services.{key}.volumeMounts[{i}] names "
                        f"{mount.get('name')}, which spec.pvcs does not list"
                    )
    return problems
