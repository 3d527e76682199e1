"""The vLLM OpenAI server's container, built once for every provider whose pods Runway renders
with vLLM in them (today llm-d's decode and prefill pods and Direct vLLM's): image, flags,
ports, resources, probes, environment and mounts; and the Deployment and Service that run it
with the model's volumes.

Probes: vLLM answers /health once its engine is up, so the same three probes guard every such
container. A startup probe gives the model up to ten minutes to load (60 x 10 s) before the
liveness probe may restart a stuck server, and the readiness probe keeps a pod out of the
Service and the pool until it serves. llm-d's own P/D guide runs the same three on both roles'
vLLM, on vLLM's own port (behind the routing sidecar on a decode pod): llm-d/llm-d
guides/pd-disaggregation/ms-pd/values.yaml (decode and prefill `containers`, commit 0b8cde6),
while llm-d-inference-scheduler v0.6.0 (the pinned sidecar's release) sets none in its test
pods (test/sidecar/config/nixl/qwen-decoder-pod.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.versions import Versions
from core.rendering.common import (
    HTTP_PORT,
    cache_env,
    container_resources,
    deployment_and_service,
    env,
    gpu_type,
    http_port,
    pod_volumes,
    spec_overrides,
    vllm_args,
)

SERVING_CONTAINER = "vllm"  # the container's name, where the core's invariants look for it


def vllm_probes(port: str) -> dict[str, Any]:
    """Startup, liveness and readiness probes on vLLM's /health at the named `port`."""
    probe = {"httpGet": {"path": "/health", "port": port}}
    return {
        "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 60},
        "livenessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
    }


def vllm_container(
    md: ModelDeployment,
    pins: Versions,
    *,
    gpus: int,
    memory: str | None,
    mounts: Sequence[Mapping[str, Any]],
    port: int = HTTP_PORT,
    port_name: str = "http",
    host: bool = False,
    extra_args: Sequence[str] = (),
    extra_env: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The vLLM server of `md` (spec.engine.image or the pinned vLLM image) listening on `port`
    (named `port_name`; `host`: on 0.0.0.0 by flag), with the flags derived from the spec, then
    `extra_args`; the env of spec.env, the cache variables and `extra_env`."""
    skip = frozenset({"host", "port"} if host else {"port"})
    listen = ["--host", "0.0.0.0"] if host else []
    ports = (
        http_port()
        if port_name == "http" and port == HTTP_PORT
        else [{"name": port_name, "containerPort": port, "protocol": "TCP"}]
    )
    container = vllm_pod_container(
        md, pins, SERVING_CONTAINER, gpus=gpus, memory=memory, mounts=mounts, extra_env=extra_env
    )
    container["args"] = [
        *listen,
        "--port",
        str(port),
        *vllm_args(md, gpus=gpus, skip=skip),
        *extra_args,
    ]
    container["ports"] = ports
    return container | vllm_probes(port_name)


def vllm_pod_container(
    md: ModelDeployment,
    pins: Versions,
    name: str,
    *,
    gpus: int,
    memory: str | None,
    mounts: Sequence[Mapping[str, Any]],
    extra_env: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A container `name` of a pod that runs `md`'s vLLM (the server, or a multi-node worker):
    spec.engine.image or the pinned vLLM image, `gpus` and the spec's memory and CPU, the env of
    spec.env, the cache variables and `extra_env`, and `mounts`."""
    container: dict[str, Any] = {
        "name": name,
        "image": md.image_override or f"vllm/vllm-openai:{pins.vllm}",
        "resources": container_resources(
            gpus=gpus,
            gpu_type=gpu_type(md),
            memory=memory,
            cpu=md.spec.get("resources", {}).get("cpu"),
        ),
    }
    variables = env(md, extra=[*cache_env(md), *extra_env])
    if variables:  # an empty list is dropped by the API server (omitempty): no drift
        container["env"] = variables
    if mounts:
        container["volumeMounts"] = [dict(m) for m in mounts]
    return container


def vllm_deployment(
    md: ModelDeployment,
    name: str,
    pins: Versions,
    *,
    gpus: int,
    memory: str | None,
    replicas: int,
    port: int = HTTP_PORT,
    port_name: str = "http",
    host: bool = False,
    extra_args: Sequence[str] = (),
    extra_env: Sequence[Mapping[str, Any]] = (),
    component: str = "server",
    init_containers: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The Deployment `name` (with `replicas` pods of `component`) running `md`'s vLLM server
    (vllm_container: `gpus`, `memory`, `port`, `host` and the extras) with the model's volumes
    and the provider's accepted `spec` overrides, and its Service; `init_containers` and
    `labels` go on the pods (see deployment_and_service)."""
    volumes, mounts = pod_volumes(md, gpus=gpus)
    container = vllm_container(
        md,
        pins,
        gpus=gpus,
        memory=memory,
        mounts=mounts,
        port=port,
        port_name=port_name,
        host=host,
        extra_args=extra_args,
        extra_env=extra_env,
    )
    return deployment_and_service(
        md,
        name,
        container,
        replicas=replicas,
        volumes=volumes,
        component=component,
        spec_overrides=spec_overrides(md),
        init_containers=init_containers,
        labels=labels,
    )
