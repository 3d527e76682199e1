"""What every provider renderer shares: object metadata, the one deep merge, environment, engine
flags and resources. A sixth provider reuses these instead of writing its own."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import DEFAULT_GPU_TYPE, Engine, ModelDeployment, VolumePurpose, dig
from core.rendering.podsecurity import ROOT_IMAGE, Hardening, harden, harden_container

MANAGED_BY = "runway"
LABEL_MODEL_DEPLOYMENT = "airunway.ai/model-deployment"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
ANNOTATION_RENDERED_FROM = "airunway.ai/rendered-from"
HF_TOKEN_KEY = "HF_TOKEN"
HF_HOME_KEY = "HF_HOME"
DEFAULT_ACCESS_MODE = "ReadWriteMany"  # what AI Runway's managed claims default to


def object_meta(
    md: ModelDeployment, name: str, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """metadata for a rendered object: same namespace, Runway's labels, a back-reference.

    No ownerReference: the ModelDeployment's uid is not known when rendering for Git; the
    annotation names the owner instead, and pruning is the GitOps tool's job."""
    meta: dict[str, Any] = {
        "name": name,
        "labels": {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_MODEL_DEPLOYMENT: md.name,
            **dict(labels or {}),
        },
        "annotations": {
            ANNOTATION_RENDERED_FROM: f"ModelDeployment/{md.namespace}/{md.name}".replace("//", "/")
        },
    }
    if md.namespace:
        meta["namespace"] = md.namespace
    return meta


def pod_labels(md: ModelDeployment, **extra: str) -> dict[str, str]:
    """Labels on the serving pods (what an InferencePool selects) plus podTemplate labels."""
    user = dig(md.spec, "podTemplate", "metadata", "labels") or {}
    return {**user, LABEL_MODEL_DEPLOYMENT: md.name, **extra}


def pod_annotations(md: ModelDeployment) -> dict[str, str]:
    return dict(dig(md.spec, "podTemplate", "metadata", "annotations") or {})


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """The one merge of overrides into rendered objects: objects merge key by key, anything
    else replaces, and an explicit null removes the key. Neither argument is changed."""
    out = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def hf_token_env(md: ModelDeployment) -> list[dict[str, Any]]:
    """HF_TOKEN from the named Secret: a reference, never the value."""
    secret = dig(md.spec, "secrets", "huggingFaceToken")
    if not secret:
        return []
    return [
        {"name": HF_TOKEN_KEY, "valueFrom": {"secretKeyRef": {"name": secret, "key": HF_TOKEN_KEY}}}
    ]


def hf_home_env(md: ModelDeployment) -> list[dict[str, Any]]:
    """HF_HOME at the model-cache mount, so downloads land in (and are reused from) the cache;
    a user's own HF_HOME in spec.env wins, as in AI Runway."""
    if any(e.get("name") == HF_HOME_KEY for e in md.spec.get("env") or ()):
        return []
    cache = next((v for v in md.volumes if v.get("purpose") == VolumePurpose.MODEL_CACHE), None)
    if cache is None or not cache.get("mountPath"):
        return []
    return [{"name": HF_HOME_KEY, "value": str(cache["mountPath"])}]


VLLM_CACHE_ROOT_KEY = "VLLM_CACHE_ROOT"


def cache_env(md: ModelDeployment) -> list[dict[str, Any]]:
    """The cache variables of a pod that runs vLLM: HF_HOME at the model cache (hf_home_env)
    and VLLM_CACHE_ROOT at the compilation cache, where vLLM keeps its torch.compile and CUDA
    graph artifacts (vllm/envs.py; default ~/.cache/vllm, lost with the pod). A user's own
    variable of either name in spec.env wins."""
    out = hf_home_env(md)
    if md.engine_type != Engine.VLLM or any(
        e.get("name") == VLLM_CACHE_ROOT_KEY for e in md.spec.get("env") or ()
    ):
        return out
    cache = next(
        (v for v in md.volumes if v.get("purpose") == VolumePurpose.COMPILATION_CACHE), None
    )
    if cache is not None and cache.get("mountPath"):
        out.append({"name": VLLM_CACHE_ROOT_KEY, "value": str(cache["mountPath"])})
    return out


def served_model_name(md: ModelDeployment) -> str:
    """The name the engine serves: gateway.modelName when the gateway routes on it (the route
    matches that name), else spec.model.servedName; '' when neither is set."""
    if dig(md.spec, "gateway", "enabled") is True and dig(md.spec, "gateway", "modelName"):
        return str(dig(md.spec, "gateway", "modelName"))
    return md.served_name


def managed_claims(md: ModelDeployment) -> list[dict[str, Any]]:
    """A v1 PersistentVolumeClaim for each volume with a size (the claims Runway manages); the
    class is written only when given (absent = the cluster default, "" = no class)."""
    claims = []
    for volume in md.volumes:
        if volume.get("size") is None:
            continue
        spec: dict[str, Any] = {
            "accessModes": [str(volume.get("accessMode") or DEFAULT_ACCESS_MODE)],
            "resources": {"requests": {"storage": str(volume["size"])}},
            "volumeMode": "Filesystem",  # the API server's default, written out: no drift
        }
        if "storageClassName" in volume:
            spec["storageClassName"] = str(volume["storageClassName"] or "")
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": object_meta(md, claim_name(md, volume)),
                "spec": spec,
            }
        )
    return claims


def claim_name(md: ModelDeployment, volume: Mapping[str, Any]) -> str:
    return str(volume.get("claimName") or f"{md.name}-{volume['name']}")


def env(md: ModelDeployment, *, extra: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """spec.env as given (a user HF_TOKEN yields to the Secret), then `extra`, then HF_TOKEN."""
    token = hf_token_env(md)
    user = [
        copy.deepcopy(dict(e))
        for e in md.spec.get("env") or ()
        if not (token and e.get("name") == HF_TOKEN_KEY)
    ]
    return user + [dict(e) for e in extra] + token


def flag(name: str, value: str = "") -> list[str]:
    return [f"--{name}", value] if value != "" else [f"--{name}"]


NIXL_CONNECTOR = "NixlConnector"


def nixl_kv_transfer() -> list[str]:
    """vLLM's --kv-transfer-config for disaggregated serving over NIXL, as llm-d's and Dynamo's
    own examples pass it to both roles (kv_both: a pod can send and receive KV blocks)."""
    config = {"kv_connector": NIXL_CONNECTOR, "kv_role": "kv_both"}
    return flag("kv-transfer-config", json.dumps(config, sort_keys=True))


def user_args(md: ModelDeployment) -> list[str]:
    """spec.engine.args sorted by name (--key value, or --key for an empty value)."""
    args: Mapping[str, str] = md.engine.get("args") or {}
    return [token for key in sorted(args) for token in flag(key, str(args[key]))]


def vllm_args(md: ModelDeployment, *, gpus: int, skip: frozenset[str] = frozenset()) -> list[str]:
    """The vLLM server's launch flags derived from the spec, then spec.engine.args, then extraArgs.
    Derived flags named in `skip` (set explicitly by the user) are left out."""
    engine = md.engine
    derived: list[tuple[str, str]] = []
    if md.model_id:
        derived.append(("model", md.model_id))
    if served_model_name(md):
        derived.append(("served-model-name", served_model_name(md)))
    if engine.get("contextLength"):
        derived.append(("max-model-len", str(engine["contextLength"])))
    if engine.get("trustRemoteCode"):
        derived.append(("trust-remote-code", ""))
    derived.append(
        (
            "enable-prefix-caching"
            if engine.get("enablePrefixCaching", True)
            else "no-enable-prefix-caching",
            "",
        )
    )
    if engine.get("enforceEager"):
        derived.append(("enforce-eager", ""))
    if gpus > 1:
        derived.append(("tensor-parallel-size", str(gpus)))
    explicit = set(engine.get("args") or {}) | {
        t[2:].split("=", 1)[0] for t in engine.get("extraArgs") or () if t.startswith("--")
    }
    tokens = [
        t
        for name, value in derived
        if name not in explicit and name not in skip
        for t in flag(name, value)
    ]
    return tokens + user_args(md) + [str(t) for t in engine.get("extraArgs") or ()]


def container_resources(
    *, gpus: int, gpu_type: str, memory: str | None, cpu: str | None
) -> dict[str, Any]:
    """requests and limits: GPUs in both (they cannot be overcommitted), memory in both, CPU as a request."""
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if gpus > 0:
        limits[gpu_type or DEFAULT_GPU_TYPE] = requests[gpu_type or DEFAULT_GPU_TYPE] = str(gpus)
    if memory:
        limits["memory"] = requests["memory"] = str(memory)
    if cpu:
        requests["cpu"] = str(cpu)
    out: dict[str, Any] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


def placement(md: ModelDeployment) -> dict[str, Any]:
    """nodeSelector and tolerations for a pod spec, when the ModelDeployment sets them."""
    out: dict[str, Any] = {}
    if md.spec.get("nodeSelector"):
        out["nodeSelector"] = dict(md.spec["nodeSelector"])
    if md.spec.get("tolerations"):
        out["tolerations"] = copy.deepcopy(list(md.spec["tolerations"]))
    return out


def engine_pod_spec(
    md: ModelDeployment,
    containers: Sequence[Mapping[str, Any]],
    *,
    hardening: Hardening = ROOT_IMAGE,
) -> dict[str, Any]:
    """The spec of a pod whose container runs an engine: the containers, the spec's placement,
    no service links, and the securityContext its image allows (core/rendering/podsecurity.py;
    the vLLM image's, which runs as root, unless `hardening` says otherwise). With links on
    (Kubernetes' default), every Service of the namespace becomes env in the pod: a Service named
    `vllm`, anyone's, sets `VLLM_PORT=tcp://IP:PORT`, and vLLM stops at start on it ("VLLM_PORT
    '...' appears to be a URI", vllm/envs.py `get_vllm_port`, read wherever vLLM opens a port for
    its workers; the serving tier, tests/serving/test_service_links.py, shows it). The engines
    find Services by DNS."""
    spec = {
        "containers": [dict(c) for c in containers],
        "enableServiceLinks": False,
        **placement(md),
    }
    return harden(spec, hardening)


SHM_VOLUME = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}}


def pod_volumes(
    md: ModelDeployment, *, gpus: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container mounts) of a vLLM pod Runway renders: the claims, and /dev/shm
    in memory when tensor parallelism spans more than one GPU (its ranks share memory there;
    the container runtime's 64 MiB default makes NCCL fail or hang at start)."""
    volumes, mounts = claim_volumes(md)
    if gpus > 1:
        volumes.append(dict(SHM_VOLUME))
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    return volumes, mounts


def claim_volumes(md: ModelDeployment) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container mounts) for spec.model.storage.volumes, as PVC references."""
    volumes, mounts = [], []
    for volume in md.volumes:
        claim = claim_name(md, volume)
        volumes.append({"name": volume["name"], "persistentVolumeClaim": {"claimName": claim}})
        mount = {"name": volume["name"], "mountPath": volume["mountPath"]}
        if volume.get(
            "readOnly"
        ):  # built-in types drop false (omitempty): emitting it would be drift
            mount["readOnly"] = True
        mounts.append(mount)
    return volumes, mounts


def gpu_type(md: ModelDeployment) -> str:
    return str(dig(md.spec, "resources", "gpu", "type") or DEFAULT_GPU_TYPE)


HTTP_PORT = 8000


def http_port() -> list[dict[str, Any]]:
    return [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}]


def deployment_and_service(
    md: ModelDeployment,
    name: str,
    container: Mapping[str, Any],
    *,
    replicas: int,
    volumes: Sequence[Mapping[str, Any]] = (),
    component: str = "server",
    spec_overrides: Mapping[str, Any] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """An apps/v1 Deployment serving `container` on port 8000 (or the native sidecar in
    `init_containers` whose port is named http), and its ClusterIP Service. `labels` go on the
    pods besides the selector's; `spec_overrides` (a provider's accepted `spec` root) is merged
    into the Deployment spec."""
    selector = {LABEL_MODEL_DEPLOYMENT: md.name, "app.kubernetes.io/component": component}
    pod_spec = engine_pod_spec(md, [container])
    if init_containers:  # hardened as the serving container is: they share its pod
        pod_spec["initContainers"] = [harden_container(c, ROOT_IMAGE) for c in init_containers]
    if volumes:
        pod_spec["volumes"] = [dict(v) for v in volumes]
    template: dict[str, Any] = {
        "metadata": {"labels": pod_labels(md, **dict(labels or {}), **selector)},
        "spec": pod_spec,
    }
    if pod_annotations(md):
        template["metadata"]["annotations"] = pod_annotations(md)
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": selector},
        "template": template,
    }
    if spec_overrides:
        spec = deep_merge(spec, spec_overrides)
        spec["selector"] = {
            "matchLabels": selector
        }  # the selector is Runway's; overrides cannot break it
        spec["template"].setdefault("metadata", {}).setdefault("labels", {}).update(selector)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(md, name),
        "spec": spec,
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(md, name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    return [deployment, service]


def spec_overrides(md: ModelDeployment) -> Mapping[str, Any] | None:
    """The accepted `spec` root of the overrides (already checked at admission), if any."""
    value = dig(md.spec, "provider", "overrides", "spec")
    return value if isinstance(value, Mapping) else None
