"""KubeRay: where a RayService's vLLM engines are (each Ray Serve LLM config, for the core's GPU
and served-name invariants) and the invariant of its own wiring: each config's worker group has
the pods its replicas span.

Ray Serve LLM runs one vLLM engine per replica of each LLM config, with tensor_parallel_size x
pipeline_parallel_size workers of one GPU each (Ray <RAY_VERSION>
ray/llm/_internal/serve/engines/vllm/vllm_models.py:197-207, 243-255); the GPUs come from the
worker group the renderer gives that config (KubeRay <KUBERAY_VERSION> makes a group's `replicas` pods from
its template, each with the container's nvidia.com/gpu limit as Ray's GPUs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ProviderContext, Server
from core.rendering.common import claim_name
from core.rendering.invariants import ref

KIND = "RayService"
# The worker group the renderer gives each LLM config of the application (render.py).
GROUPS = {
    "llm_configs[0]": "gpu-workers",
    "prefill_config": "prefill-workers",
    "decode_config": "decode-workers",
}


@dataclass(frozen=True, slots=True)
class Engine:
    """One LLM config of a RayService and the worker group that runs it."""

    where: str  # spec.serveConfigV2 applications[i].args.<config>
    config: Mapping[str, Any]
    group: Mapping[str, Any] | None
    group_at: str
    replicas: int  # Ray Serve replicas (autoscaling_config.min_replicas)


def _serve(service: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        serve = json.loads(dig(service, "spec", "serveConfigV2") or "{}")
    except (TypeError, ValueError):
        return {}
    return serve if isinstance(serve, Mapping) else {}


def engines(service: Mapping[str, Any]) -> Iterator[Engine]:
    """Every LLM config of a rendered RayService with its worker group."""
    groups = dig(service, "spec", "rayClusterConfig", "workerGroupSpecs") or ()
    for a, app in enumerate(_serve(service).get("applications") or ()):
        args = app.get("args") or {}
        for key, name in GROUPS.items():
            config = (
                args.get(key) if key != "llm_configs[0]" else (args.get("llm_configs") or [None])[0]
            )
            if not isinstance(config, Mapping):
                continue
            found = [(i, g) for i, g in enumerate(groups) if g.get("groupName") == name]
            i, group = found[0] if found else (-1, None)
            scaling = dig(config, "deployment_config", "autoscaling_config") or {}
            yield Engine(
                f"spec.serveConfigV2 applications[{a}].args.{key}",
                config,
                group,
                f"spec.rayClusterConfig.workerGroupSpecs[{i}]",
                int(scaling.get("min_replicas") or 1),
            )


def _pods_per_replica(engine: Engine) -> int:
    return max(int((engine.group or {}).get("replicas") or 0) // engine.replicas, 1)


def serving_containers(obj: Mapping[str, Any]) -> list[Server]:
    """Each LLM config as the vLLM engine it starts (its engine_kwargs as the flags they stand
    for), with the GPUs of each pod of its worker group and the pods one replica spans."""
    if obj.get("kind") != KIND:
        return []
    out = []
    for engine in engines(obj):
        kwargs = engine.config.get("engine_kwargs") or {}
        args = [
            "--tensor-parallel-size",
            str(kwargs.get("tensor_parallel_size", 1)),
            "--pipeline-parallel-size",
            str(kwargs.get("pipeline_parallel_size", 1)),
            "--served-model-name",
            str(dig(engine.config, "model_loading_config", "model_id")),
        ]
        containers = dig(engine.group or {}, "template", "spec", "containers") or [{}]
        limits = dig(containers[0], "resources", "limits") or {}
        gpus = sum(int(v) for k, v in limits.items() if k.endswith("/gpu"))
        at = f"{engine.group_at}.template.spec.containers[0].resources.limits"
        server = Server(obj, engine.where, {"args": args}, {}, gpus, at, _pods_per_replica(engine))
        out.append(server)
    return out


def invariants(
    md: ModelDeployment, objects: Sequence[Mapping[str, Any]], context: ProviderContext
) -> list[str]:
    """Every LLM config has its worker group, the group's pods are whole replicas, and every Ray
    pod mounts each volume of spec.model.storage from a claim that is rendered or declared."""
    problems: list[str] = []
    for service in (o for o in objects if o.get("kind") == KIND):
        problems += _mounts(md, service, objects)
        for engine in engines(service):
            if engine.group is None:
                name = GROUPS[engine.where.rsplit(".", 1)[-1]]
                problems.append(f"{ref(service)} {engine.where} has no worker group {name}")
                continue
            pods = int(engine.group.get("replicas") or 0)
            if pods % engine.replicas or pods < engine.replicas:
                problems.append(
                    f"{ref(service)} {engine.group_at}.replicas is {pods}, not a whole number "
                    f"of the {engine.replicas} Ray Serve replicas of {engine.where}"
                )
    return problems


def _templates(service: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(field path, pod template) of the head and of every worker group."""
    cluster = dig(service, "spec", "rayClusterConfig") or {}
    yield "spec.rayClusterConfig.headGroupSpec.template", dig(cluster, "headGroupSpec", "template")
    for i, group in enumerate(cluster.get("workerGroupSpecs") or ()):
        yield f"spec.rayClusterConfig.workerGroupSpecs[{i}].template", group.get("template") or {}


def _mounts(
    md: ModelDeployment, service: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Each claim the Ray pods mount, once with every template that mounts it, unless it is
    rendered or declared pre-existing; and each Ray container that lacks a storage volume."""
    known = {claim_name(md, v) for v in md.volumes if v.get("size") is None} | {
        str(dig(o, "metadata", "name")) for o in objects if o.get("kind") == "PersistentVolumeClaim"
    }
    mounting: dict[str, list[str]] = {}
    problems: list[str] = []
    for at, template in _templates(service):
        for volume in dig(template, "spec", "volumes") or ():
            claim = dig(volume, "persistentVolumeClaim", "claimName")
            if claim is not None:
                mounting.setdefault(str(claim), []).append(at)
        containers = dig(template, "spec", "containers") or [{}]
        mounted = {m.get("name") for m in containers[0].get("volumeMounts") or ()}
        missing = [str(v["name"]) for v in md.volumes if v["name"] not in mounted]
        if missing:
            problems.append(
                f"{ref(service)} {at}.spec.containers[0].volumeMounts lacks "
                f"{', '.join(missing)} of spec.model.storage.volumes"
            )
    problems += [
        f"{ref(service)} mounts claim {claim} ({', '.join(where)}), which is neither rendered "
        "(PersistentVolumeClaim) nor declared pre-existing"
        for claim, where in sorted(mounting.items())
        if claim not in known
    ]
    return problems
