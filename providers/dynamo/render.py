"""NVIDIA Dynamo: one nvidia.com DynamoGraphDeployment per ModelDeployment."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import (
    DEFAULT_ACCESS_MODE,
    claim_name,
    deep_merge,
    flag,
    hf_home_env,
    managed_claims,
    nixl_kv_transfer,
    object_meta,
    placement,
    served_model_name,
    user_args,
)
from core.rendering.podsecurity import ROOT_IMAGE, harden, harden_container
from providers.dynamo.epp import block_flag, epp

_RUNTIME = {"vllm": "vllm-runtime", "sglang": "sglang-runtime", "trtllm": "tensorrtllm-runtime"}
# The worker services, named per engine as Dynamo <DYNAMO_VERSION> names them: its planner finds
# the prefill and decode workers by these names (ai-dynamo <DYNAMO_VERSION>
# dynamo/planner/config/backend_components.py: VllmPrefillWorker/VllmDecodeWorker, SGLang's short
# prefill/decode, TRTLLMPrefillWorker/TRTLLMDecodeWorker), and its deploy examples name an
# aggregated SGLang worker `decode` and a TRT-LLM one `TRTLLMWorker`. vLLM's aggregated worker
# keeps `VllmWorker`, the name AI Runway renders.
WORKERS: Mapping[str, Mapping[str | None, str]] = {
    "vllm": {None: "VllmWorker", "prefill": "VllmPrefillWorker", "decode": "VllmDecodeWorker"},
    "sglang": {None: "decode", "prefill": "prefill", "decode": "decode"},
    "trtllm": {
        None: "TRTLLMWorker",
        "prefill": "TRTLLMPrefillWorker",
        "decode": "TRTLLMDecodeWorker",
    },
}
# The Frontend's size when spec.provider.overrides.frontend does not give it.
_FRONTEND_REPLICAS = 1
_FRONTEND_REQUESTS = {"cpu": "2", "memory": "4Gi"}


# AI Runway's Dynamo test backend: `python3 -m dynamo.mocker` instead of an engine, no GPUs.
ANNOTATION_TEST_BACKEND = "airunway.ai/dynamo-test-backend"
MOCKER = "mocker"


def render(md: ModelDeployment, pins: Versions, context: ProviderContext) -> list[dict[str, Any]]:
    """One DynamoGraphDeployment: a frontend and the worker services. routerMode, frontend and epp
    are consumed here and never emitted; `spec` overrides are merged into the object's spec."""
    engine = md.engine_type
    image = md.image_override or f"nvcr.io/nvidia/ai-dynamo/{_RUNTIME[engine]}:{pins.pin('dynamo')}"
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    secret = dig(md.spec, "secrets", "huggingFaceToken")
    gateway = behind_gateway(md)
    services: dict[str, Any] = (
        {"Epp": epp(md, overrides, pins, served_model_name(md) or md.model_id)}
        if gateway
        else {"Frontend": _frontend(overrides, image)}
    )
    names = WORKERS[engine]
    if md.is_disaggregated:
        for role in ("prefill", "decode"):
            part = dig(md.spec, "scaling", role) or {}
            gpus = int(dig(part, "gpu", "count") or 0)
            services[names[role]] = _worker(
                md,
                image,
                gpus=gpus,
                replicas=int(part.get("replicas", 1)),
                memory=part.get("memory"),
                role=role,
            )
    else:
        replicas = max(int(md.spec.get("scaling", {}).get("replicas", 1)), 1)
        memory = md.spec.get("resources", {}).get("memory")
        services[names[None]] = _worker(
            md, image, gpus=md.gpu_count, replicas=replicas, memory=memory, role=None
        )
    if gateway:  # each worker serves through a frontend sidecar; Dynamo's picker routes to them
        for key, service in services.items():
            if key != "Epp":
                service["frontendSidecar"] = _sidecar(image, secret)
    if is_test_backend(md):
        _as_mocker(md, services, pins)
    for service in services.values():
        service["extraPodSpec"] = _hardened(service["extraPodSpec"])
    if secret:
        for service in services.values():
            service["envFromSecret"] = secret
    spec: dict[str, Any] = {"backendFramework": engine, "services": services}
    if md.volumes:
        spec["pvcs"] = [_pvc(md, v) for v in md.volumes]
    graph = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": object_meta(md, md.name),
        "spec": spec,
    }
    if isinstance(overrides.get("spec"), Mapping):
        graph = deep_merge(graph, {"spec": overrides["spec"]})
    claims = [c for c in managed_claims(md) if not _creates(md, c["metadata"]["name"])]
    return [graph, *claims]


def _hardened(extra: Mapping[str, Any]) -> dict[str, Any]:
    """A service's extraPodSpec with the root-image securityContext (core/rendering/
    podsecurity.py) on the pod and on mainContainer: the operator merges both into the pod it
    builds, and adds only fsGroup itself (providers/dynamo/__init__.py POD_SECURITY)."""
    out = harden(extra, ROOT_IMAGE)
    out["mainContainer"] = harden_container(extra["mainContainer"], ROOT_IMAGE)
    return out


def _frontend(overrides: Mapping[str, Any], image: str) -> dict[str, Any]:
    """The standalone Frontend (no gateway), on the engine's runtime image as Dynamo's own deploy
    examples run it, sized by spec.provider.overrides.frontend (typed and bounded in
    overrides.py) or Runway's default."""
    own = overrides.get("frontend") or {}
    requests = {
        **_FRONTEND_REQUESTS,
        **{k: str(v) for k, v in (own.get("resources") or {}).items()},
    }
    return {
        "componentType": "frontend",
        "replicas": int(own.get("replicas", _FRONTEND_REPLICAS)),
        "resources": {"requests": requests},
        "extraPodSpec": {"mainContainer": {"image": image}},
        "envs": [
            {"name": "DYN_ROUTER_MODE", "value": str(overrides.get("routerMode") or "round-robin")}
        ],
    }


def _creates(md: ModelDeployment, claim: str) -> bool:
    """Whether the DGD's `pvcs[].create` makes this managed claim. Its CRD at the pinned version
    requires size, storageClass and volumeAccessMode for create; a volume that leaves the class
    to the cluster default has no storageClass, so Runway renders that claim itself."""
    return any(
        claim_name(md, v) == claim and v.get("size") is not None and "storageClassName" in v
        for v in md.volumes
    )


def _pvc(md: ModelDeployment, volume: Mapping[str, Any]) -> dict[str, Any]:
    name = claim_name(md, volume)
    if not _creates(md, name):
        return {"name": name, "create": False}
    return {
        "name": name,
        "create": True,
        "size": str(volume["size"]),
        "storageClass": str(volume["storageClassName"] or ""),
        "volumeAccessMode": str(volume.get("accessMode") or DEFAULT_ACCESS_MODE),
    }


def _worker(
    md: ModelDeployment,
    image: str,
    *,
    gpus: int,
    replicas: int,
    memory: str | None,
    role: str | None,
) -> dict[str, Any]:
    engine = md.engine_type
    limits = {"gpu": str(gpus)}
    if memory:
        limits["memory"] = str(memory)
    if md.spec.get("resources", {}).get("cpu") and role is None:
        limits["cpu"] = str(md.spec["resources"]["cpu"])
    worker: dict[str, Any] = {
        "componentType": "worker",
        "replicas": replicas,
        "resources": {"limits": limits, "requests": {"gpu": str(gpus)}},
        "extraPodSpec": {
            "mainContainer": {
                "image": image,
                "command": ["python3", "-m", f"dynamo.{engine}"],
                "args": _args(md, role, gpus),
            },
            **placement(md),
        },
    }
    if role is not None:
        worker["subComponentType"] = role
    if md.pipeline_parallel > 1:
        # One replica across P pods of `gpus` GPUs each, with --tensor-parallel-size gpus and
        # --pipeline-parallel-size P (spec.engine.args, user_args): the operator injects the
        # multi-node launch exactly when TP x PP exceeds the GPUs of one container
        # (deploy/operator/internal/dynamo/backend_vllm.go needsTensorParallelMultinodeLaunch;
        # SGLang's --nnodes/--node-rank, backend_sglang.go getMultinodeFlags; TRT-LLM's mpirun
        # over nodes x GPUs per node, backend_trtllm.go setupLeaderContainer).
        worker["multinode"] = {"nodeCount": md.pipeline_parallel}
    envs = [dict(e) for e in md.spec.get("env") or ()] + hf_home_env(md)
    if envs:
        worker["envs"] = envs
    mounts = [
        {
            "name": claim_name(md, v),
            "mountPoint": v["mountPath"],
            "useAsCompilationCache": v.get("purpose") == "compilationCache",
        }
        for v in md.volumes
    ]
    if mounts:
        worker["volumeMounts"] = mounts
    return worker


# Spec switches per engine, as the worker's parser spells them (providers/dynamo/catalogs/dynamo-*.json):
# (spec field, value that emits the flag, flag). SGLang 0.5.10 caches prefixes unless told
# --disable-radix-cache and has no --enforce-eager (--disable-cuda-graph is its eager mode);
# dynamo.trtllm takes none of them as flags.
_SWITCHES: Mapping[str, tuple[tuple[str, bool, str], ...]] = {
    "vllm": (
        ("trustRemoteCode", True, "trust-remote-code"),
        ("enablePrefixCaching", True, "enable-prefix-caching"),
        ("enablePrefixCaching", False, "no-enable-prefix-caching"),  # vLLM caches by default
        ("enforceEager", True, "enforce-eager"),
    ),
    "sglang": (
        ("trustRemoteCode", True, "trust-remote-code"),
        ("enablePrefixCaching", False, "disable-radix-cache"),
        ("enforceEager", True, "disable-cuda-graph"),
    ),
    "trtllm": (),
}
# The context-length flag of each worker's parser (dynamo.trtllm hands --max-seq-len to
# TensorRT-LLM's LLM arguments as max_seq_len).
_CONTEXT = {"vllm": "max-model-len", "sglang": "context-length", "trtllm": "max-seq-len"}
_TENSOR_PARALLEL = {
    "vllm": "tensor-parallel-size",
    "sglang": "tp-size",
    "trtllm": "tensor-parallel-size",
}


def _args(md: ModelDeployment, role: str | None, gpus: int) -> list[str]:
    engine, spec = md.engine_type, md.engine
    # dynamo.trtllm names it --model (--model-path is its obsolete alias); SGLang's is --model-path
    args = flag("model-path" if engine == "sglang" else "model", md.model_id)
    args += flag("served-model-name", served_model_name(md) or md.model_id)
    if spec.get("contextLength"):
        args += flag(_CONTEXT[engine], str(spec["contextLength"]))
    for key, when, name in _SWITCHES[engine]:
        if bool(spec.get(key, key == "enablePrefixCaching")) is when:
            args += flag(name)
    if gpus > 1:  # one worker pod runs on all its GPUs: tensor parallel = GPUs per worker
        args += flag(_TENSOR_PARALLEL[engine], str(gpus))
    if role is not None:
        args += flag("disaggregation-mode", role)
        if engine == "sglang" and not _user_sets(md, SGLANG_TRANSFER_BACKEND):
            # SGLang 0.5.10.post1 defaults to mooncake, which needs RDMA; NIXL is what Dynamo's
            # own disaggregated SGLang examples pass, and it runs over TCP as well.
            args += flag(SGLANG_TRANSFER_BACKEND.removeprefix("--"), "nixl")
        if engine == "vllm":
            args += nixl_kv_transfer()
        if engine == "trtllm" and not _user_sets(md, TRTLLM_OVERRIDES):
            args += flag(TRTLLM_OVERRIDES.removeprefix("--"), json.dumps(TRTLLM_DISAGG[role]))
    if kv_routed(md) and not _user_sets(md, KV_EVENTS[engine][0]):
        args += KV_EVENTS[engine]
    if behind_gateway(md):  # the block size the picker hashes prompts at (epp.py BLOCK)
        args += block_flag(md)
    return args + user_args(md)


# TRT-LLM's disaggregated workers: dynamo.trtllm <DYNAMO_VERSION> takes the role as --disaggregation-mode
# (dynamo/trtllm/backend_args.py:173-179) and TensorRT-LLM's own LLM arguments through
# --override-engine-args, a JSON object merged over the ones it derives
# (dynamo/trtllm/workers/llm_worker.py:291-301). Both roles need a KV cache transceiver to hand
# the KV cache over, and a prefill-only worker runs without the overlap scheduler, as Dynamo's own
# TRT-LLM disaggregated engine configs set them
# (examples/backends/trtllm/engine_configs/qwen3/prefill.yaml and decode.yaml).
TRTLLM_OVERRIDES = "--override-engine-args"
TRTLLM_DISAGG: Mapping[str, Mapping[str, Any]] = {
    "prefill": {
        "cache_transceiver_config": {"backend": "DEFAULT"},
        "disable_overlap_scheduler": True,
    },
    "decode": {"cache_transceiver_config": {"backend": "DEFAULT"}},
}


# How each worker publishes the KV-cache events a KV router needs, as Dynamo <DYNAMO_VERSION>'s own launch
# scripts pass it (one worker per pod, so the publisher's default port is the pod's own). Without
# it dynamo.vllm and dynamo.sglang publish nothing, and dynamo.trtllm publishes only when told.
KV_EVENTS: Mapping[str, list[str]] = {
    "vllm": flag(
        "kv-events-config",
        json.dumps(
            {
                "enable_kv_cache_events": True,
                "endpoint": "tcp://*:5557",
                "publisher": "zmq",
                "topic": "kv-events",
            },
            sort_keys=True,
        ),
    ),
    "sglang": flag(
        "kv-events-config",
        json.dumps(
            {"endpoint": "tcp://*:5557", "publisher": "zmq", "topic": "kv-events"}, sort_keys=True
        ),
    ),
    "trtllm": flag("publish-events-and-metrics"),
}


def kv_routed(md: ModelDeployment) -> bool:
    """A KV router picks `md`'s workers from their KV-cache events: the Frontend's with
    routerMode kv, or Dynamo's endpoint picker behind a gateway (its DYN_USEKV_EVENTS defaults
    to true). Only a worker that caches prefixes has events to publish."""
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    routed = overrides.get("routerMode") == "kv" or behind_gateway(md)
    return routed and bool(md.engine.get("enablePrefixCaching", True))


SGLANG_TRANSFER_BACKEND = "--disaggregation-transfer-backend"


def _user_sets(md: ModelDeployment, name: str) -> bool:
    """spec.engine.args gives flag `name` (then Runway's default stays out; the workers' args
    are the derived flags then spec.engine.args, see user_args)."""
    return name.removeprefix("--") in (md.engine.get("args") or {})


def _sidecar(image: str, secret: str | None) -> dict[str, Any]:
    """The worker's frontend behind a gateway. --router-mode direct in both serving modes: the
    endpoint picker chooses the workers (x-worker-instance-id, and x-prefill-instance-id when
    disaggregated) and direct is the mode that honours them, as Dynamo <DYNAMO_VERSION>'s GAIE guide and
    its disaggregated GAIE recipes run it; the default (round-robin) would choose again. It runs
    the worker's own image (dynamo.frontend is in every Dynamo runtime image), as Dynamo's GAIE
    examples run it, so a pod pulls one image, not a vLLM one beside an SGLang or TRT-LLM one."""
    args = ["-m", "dynamo.frontend", "--router-mode", "direct"]
    sidecar: dict[str, Any] = {"image": image, "args": args}
    if secret:
        sidecar["envFromSecret"] = secret
    return sidecar


# AI Runway's Dynamo mocker test backend (the airunway.ai/dynamo-test-backend: mocker annotation):
# `python3 -m dynamo.mocker` simulates a vLLM worker with no GPU, in the dynamo-planner image.
_MOCKER_RESOURCES = {"cpu": "100m", "memory": "256Mi"}


def _as_mocker(md: ModelDeployment, services: dict[str, Any], pins: Versions) -> None:
    """Turn the services into the mocker's: the planner image everywhere, a small Frontend, and
    workers that run the mocker with small CPU and memory requests equal to their limits."""
    image = f"nvcr.io/nvidia/ai-dynamo/dynamo-planner:{pins.pin('dynamo')}"
    for service in services.values():
        container = service["extraPodSpec"]["mainContainer"]
        container["image"] = image
        if service["componentType"] == "frontend":
            if not dig(md.overrides or {}, "frontend", "resources"):
                service["resources"] = {"requests": dict(_MOCKER_RESOURCES)}
            continue
        role = service.get("subComponentType")
        container["command"] = ["python3", "-m", "dynamo.mocker"]
        container["args"] = _mocker_args(md) + (flag("disaggregation-mode", role) if role else [])
        service["resources"] = {
            "requests": dict(_MOCKER_RESOURCES),
            "limits": dict(_MOCKER_RESOURCES),
        }


def _mocker_args(md: ModelDeployment) -> list[str]:
    args = flag("model-path", md.model_id) + flag("model-name", md.served_name or md.model_id)
    args += flag("speedup-ratio", "1000.0") + flag("num-gpu-blocks-override", "4096")
    return args + flag("block-size", "16") + flag("max-num-seqs", "64")


def worker_names(md: ModelDeployment) -> list[str]:
    """The worker services Runway renders for `md`, by the names its engine gives them."""
    names = WORKERS.get(md.engine_type or "vllm", WORKERS["vllm"])
    roles: tuple[str | None, ...] = ("prefill", "decode") if md.is_disaggregated else (None,)
    return [names[role] for role in roles]


def behind_gateway(md: ModelDeployment) -> bool:
    """The graph serves through Dynamo's endpoint picker and the workers' frontend sidecars:
    a gateway is asked for and the engine runs (the mocker serves through its own Frontend)."""
    return dig(md.spec, "gateway", "enabled") is True and not is_test_backend(md)


def is_test_backend(md: ModelDeployment) -> bool:
    """The mocker test backend (the annotation): `python3 -m dynamo.mocker` runs instead of an
    engine, on no GPUs, serving through a standalone Frontend (never the gateway)."""
    return md.annotations.get(ANNOTATION_TEST_BACKEND) == MOCKER
