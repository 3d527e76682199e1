"""Cross-object invariants of one ModelDeployment's rendered objects, checked on every render.

A schema says each object is well formed; these say the objects fit together so the model is
served. Each failure names both objects and their fields:
  port      the port the engine listens on = containerPort = the probes' port = the Service
            targetPort = the InferencePool target port (or, when a native sidecar owns the
            pod's http port, as llm-d's routing sidecar does, the Service and the pool reach
            the sidecar's port, and the provider's invariants say it forwards to the engine)
  selector  the InferencePool selector matches the labels the operator puts on the pods
            (each provider's pods.py states its operator's rule)
  claims    every claim a pod mounts is rendered or declared pre-existing (a volume without a
            size); a provider whose objects mount claims otherwise checks them in its hook
  gpus      GPUs requested per pod x the pods one replica spans = tensor parallel x pipeline
            parallel, where the engine takes flags
  name      the model name the HTTPRoute matches = the name the engine serves
The serving containers are those of the Deployments Runway renders plus those the provider's
serving_containers hook finds in its own objects; the provider's invariants hook adds the
invariants of its own wiring.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import PodGroup, Provider, Server
from core.rendering.common import HTTP_PORT, claim_name
from core.rendering.engines import SERVING_CONTAINER
from core.selection.configs import ProviderRegistry

_TP = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp")
_PP = ("--pipeline-parallel-size", "-pp", "--pp-size")
_SERVED = ("--served-model-name",)
_MODEL = ("--model", "--model-path")
_PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def check_invariants(
    md: ModelDeployment, objects: Sequence[Mapping[str, Any]], registry: ProviderRegistry
) -> list[str]:
    """Every broken invariant among `objects` (rendered for `md` by its provider), as messages."""
    plugin = registry.plugin(md.provider_name)
    servers = _servers(objects, plugin)
    operated = plugin.pods.operator_pods(objects) if plugin is not None else []
    problems = _ports(objects, servers, operated) + _selector(objects, servers, operated)
    problems += _claims(md, objects) + _gpus(servers) + _route_name(objects, servers, operated)
    if plugin is None:
        return problems
    return problems + plugin.invariants(md, objects, registry.context(md.provider_name))


def ref(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')}/{dig(obj, 'metadata', 'name')}"


def _servers(objects: Sequence[Mapping[str, Any]], plugin: Provider | None) -> list[Server]:
    out: list[Server] = []
    for obj in objects:
        if obj.get("kind") == "Deployment":
            pod = dig(obj, "spec", "template") or {}
            for i, container in enumerate(dig(pod, "spec", "containers") or ()):
                if container.get("name") == SERVING_CONTAINER:
                    path = f"spec.template.spec.containers[{i}]"
                    labels = dig(pod, "metadata", "labels") or {}
                    out.append(Server(obj, path, container, labels))
        elif plugin is not None:
            out += plugin.serving_containers(obj)
    return out


def flag_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last of `names` in `args` (`--x v` or `--x=v`), or None."""
    value = None
    for i, token in enumerate(args):
        name, eq, inline = token.partition("=")
        if name in names:
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
    return value


def kv_connector(args: Sequence[str]) -> str | None:
    """The kv_connector of vLLM's --kv-transfer-config in `args`, or None (absent, not JSON, or
    not an object)."""
    transfer = flag_value(args, ("--kv-transfer-config",))
    try:
        config = json.loads(transfer) if transfer else None
    except ValueError:
        return None
    return str(config.get("kv_connector")) if isinstance(config, dict) else None


def _resolve(port: Any, container: Mapping[str, Any]) -> int | None:
    """A port number, or a named port looked up in the container's ports."""
    if isinstance(port, int):
        return port
    for entry in container.get("ports") or ():
        if entry.get("name") == port:
            return int(entry["containerPort"])
    return None


def front_door(owner: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
    """(index, container) of the native sidecar (an initContainer with restartPolicy Always)
    that owns a pod's http port and forwards to its engine, such as llm-d's routing sidecar."""
    inits = dig(owner, "spec", "template", "spec", "initContainers") or ()
    for i, container in enumerate(inits):
        if container.get("restartPolicy") == "Always" and _resolve("http", container) is not None:
            return i, container
    return None


def _ports(
    objects: Sequence[Mapping[str, Any]],
    servers: Sequence[Server],
    operated: Sequence[PodGroup],
) -> list[str]:
    problems: list[str] = []
    pools = [o for o in objects if o.get("kind") == "InferencePool"]
    for server in servers:
        if server.owner.get("kind") != "Deployment":
            continue
        listen = int(flag_value(server.args, ("--port",)) or HTTP_PORT)
        at = f"{server.ref} {server.path}.args --port"

        def differs(what: str, got: int | None, *, at: str = at, listen: int = listen) -> None:
            if got != listen:
                problems.append(f"{at} is {listen} but {what} is {got}")

        front = front_door(server.owner)
        own = (server.container.get("ports") or [{}])[0] if front else {"name": "http"}
        named = _resolve(own.get("name"), server.container)
        differs(f"{server.ref} {server.path}.ports[{own.get('name')}].containerPort", named)
        for probe in _PROBES:
            port = dig(server.container, probe, "httpGet", "port")
            if port is not None:
                differs(
                    f"{server.ref} {server.path}.{probe}.httpGet.port",
                    _resolve(port, server.container),
                )
        door, door_container = listen, server.container
        if front is not None:  # the Service and the pool reach the sidecar, not the engine
            index, door_container = front
            door = int(_resolve("http", door_container) or 0)
            at = (
                f"{server.ref} spec.template.spec.initContainers[{index}].ports[http].containerPort"
            )
        for service in objects:
            if service.get("kind") == "Service" and dig(service, "spec", "selector") == dig(
                server.owner, "spec", "selector", "matchLabels"
            ):
                for i, port in enumerate(dig(service, "spec", "ports") or ()):
                    differs(
                        f"{ref(service)} spec.ports[{i}].targetPort",
                        _resolve(port.get("targetPort"), door_container),
                        at=at,
                        listen=door,
                    )
        for pool in pools:
            for i, target in enumerate(dig(pool, "spec", "targetPorts") or ()):
                differs(
                    f"{ref(pool)} spec.targetPorts[{i}].number",
                    target.get("number"),
                    at=at,
                    listen=door,
                )
    for group in operated:
        if group.port is None:
            continue
        for pool in pools:
            for i, target in enumerate(dig(pool, "spec", "targetPorts") or ()):
                if target.get("number") != group.port:
                    problems.append(
                        f"{ref(pool)} spec.targetPorts[{i}].number is {target.get('number')} "
                        f"but {group.owner} serves on {group.port} ({group.port_reason})"
                    )
    return problems


def _pod_labels(
    servers: Sequence[Server], operated: Sequence[PodGroup]
) -> list[tuple[str, Mapping[str, str]]]:
    """(where, labels) for every group of serving pods, as their operator will label them."""
    groups = [
        (f"{s.ref} spec.template.metadata.labels", s.labels)
        for s in servers
        if s.owner.get("kind") == "Deployment"
    ]
    groups += [(group.where, group.labels) for group in operated]
    return groups


def _selector(
    objects: Sequence[Mapping[str, Any]],
    servers: Sequence[Server],
    operated: Sequence[PodGroup],
) -> list[str]:
    problems: list[str] = []
    groups = _pod_labels(servers, operated)
    for pool in (o for o in objects if o.get("kind") == "InferencePool"):
        selector: Mapping[str, str] = dig(pool, "spec", "selector", "matchLabels") or {}
        if not groups:
            problems.append(f"{ref(pool)} spec.selector selects no rendered serving pods")
        for where, labels in groups:
            missing = sorted(k for k, v in selector.items() if labels.get(k) != v)
            if missing:
                problems.append(
                    f"{ref(pool)} spec.selector.matchLabels does not match {where}: "
                    f"{', '.join(missing)} differ"
                )
    return problems


def _claims(md: ModelDeployment, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    declared = {claim_name(md, v) for v in md.volumes if v.get("size") is None}
    rendered = {
        str(dig(o, "metadata", "name")) for o in objects if o.get("kind") == "PersistentVolumeClaim"
    }
    problems: list[str] = []
    for obj in objects:
        if obj.get("kind") == "Deployment":
            volumes = dig(obj, "spec", "template", "spec", "volumes") or ()
            for i, volume in enumerate(volumes):
                claim = dig(volume, "persistentVolumeClaim", "claimName")
                if claim is not None and claim not in rendered | declared:
                    problems.append(
                        f"{ref(obj)} spec.template.spec.volumes[{i}] mounts claim {claim}, which "
                        "is neither rendered (PersistentVolumeClaim) nor declared pre-existing"
                    )
    return problems


def _gpu_count(server: Server) -> int:
    if server.gpus is not None:
        return server.gpus
    limits = dig(server.container, "resources", "limits") or {}
    return sum(int(v) for k, v in limits.items() if k.endswith("/gpu"))


def _gpus(servers: Sequence[Server]) -> list[str]:
    problems: list[str] = []
    for server in servers:
        gpus = _gpu_count(server)
        if gpus == 0:
            continue  # CPU serving: the engine's parallelism is not GPU-bound
        tp = int(flag_value(server.args, _TP) or 1)
        pp = int(flag_value(server.args, _PP) or 1)
        if gpus * server.nodes != tp * pp:
            where = (
                f"{server.ref} {server.gpus_at}"
                if server.gpus is not None
                else f"{server.ref} {server.path}.resources.limits"
            )
            across = f" on each of {server.nodes} pods" if server.nodes > 1 else ""
            problems.append(
                f"{where} requests {gpus} GPUs{across} but {server.ref} {server.path}.args run "
                f"tensor parallel {tp} x pipeline parallel {pp} = {tp * pp}"
            )
    return problems


def served_name(server: Server) -> str | None:
    """The model name the engine answers to: --served-model-name, else the model itself."""
    return flag_value(server.args, _SERVED) or flag_value(server.args, _MODEL)


def _route_name(
    objects: Sequence[Mapping[str, Any]],
    servers: Sequence[Server],
    operated: Sequence[PodGroup],
) -> list[str]:
    problems: list[str] = []
    for route in (o for o in objects if o.get("kind") == "HTTPRoute"):
        for r, rule in enumerate(dig(route, "spec", "rules") or ()):
            for m, match in enumerate(rule.get("matches") or ()):
                for h, header in enumerate(match.get("headers") or ()):
                    at = f"{ref(route)} spec.rules[{r}].matches[{m}].headers[{h}].value"
                    for server in servers:
                        name = served_name(server)
                        if name != header.get("value"):
                            problems.append(
                                f"{at} is {header.get('value')} but {server.ref} "
                                f"{server.path}.args serve {name}"
                            )
                    for group in operated:
                        problems += [
                            f"{at} is {header.get('value')} but {group.serves_at} serves {name}"
                            for name in group.serves
                            if name != header.get("value")
                        ]
    return problems
