"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split)."""

from __future__ import annotations

import json
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.names import ROLE_SUFFIXES, child_name
from core.model.versions import Versions
from core.rendering.common import (
    HTTP_PORT,
    cache_env,
    container_resources,
    deployment_and_service,
    env,
    gpu_type,
    http_port,
    managed_claims,
    pod_volumes,
    spec_overrides,
    vllm_args,
)


def render(md: ModelDeployment, pins: Versions) -> list[dict[str, Any]]:
    """One Deployment and Service (aggregated), or decode (primary) and prefill pairs, then a
    PersistentVolumeClaim per volume with a size."""
    if not md.is_disaggregated:
        memory = md.spec.get("resources", {}).get("memory")
        replicas = int(md.spec.get("scaling", {}).get("replicas", 1))
        return _pair(
            md, md.name, gpus=md.gpu_count, memory=memory, replicas=replicas, pins=pins, role=None
        ) + managed_claims(md)
    objects: list[dict[str, Any]] = []
    for role in ROLE_SUFFIXES:
        part = dig(md.spec, "scaling", role) or {}
        gpus = int(dig(part, "gpu", "count") or 0)
        replicas = int(part.get("replicas", 1))
        name = child_name(md.name, role)
        objects += _pair(
            md, name, gpus=gpus, memory=part.get("memory"), replicas=replicas, pins=pins, role=role
        )
    return objects + managed_claims(md)


def _pair(
    md: ModelDeployment,
    name: str,
    *,
    gpus: int,
    memory: str | None,
    replicas: int,
    pins: Versions,
    role: str | None,
) -> list[dict[str, Any]]:
    args = ["--port", str(HTTP_PORT), *vllm_args(md, gpus=gpus, skip=frozenset({"port"}))]
    if role is not None:
        kv_role = "kv_producer" if role == "prefill" else "kv_consumer"
        args += [
            "--kv-transfer-config",
            json.dumps({"kv_connector": "NixlConnector", "kv_role": kv_role}, sort_keys=True),
        ]
    volumes, mounts = pod_volumes(md, gpus=gpus)
    container: dict[str, Any] = {
        "name": "vllm",
        "image": md.image_override or f"vllm/vllm-openai:{pins.vllm}",
        "args": args,
        "ports": http_port(),
        "resources": container_resources(
            gpus=gpus,
            gpu_type=gpu_type(md),
            memory=memory,
            cpu=md.spec.get("resources", {}).get("cpu"),
        ),
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5},
    }
    variables = env(md, extra=cache_env(md))
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
    )
