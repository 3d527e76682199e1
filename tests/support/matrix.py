"""The render matrix: every provider x engine x serving mode x GPU/CPU x gateway on/off x
storage on/off that the shipped provider configs declare, as ModelDeployments, the Dynamo
mocker test backend (an annotation, not a declared engine) aggregated and disaggregated, and a
replica across two nodes for every GPU engine and mode of each provider offering multi-node."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from providers.dynamo import PROVIDER as dynamo  # noqa: N811 - the value, as the module was used
from providers.modules import plugins

MOCKER = {"airunway.ai/dynamo-test-backend": "mocker"}
# (provider, engine) that refuse spec.model.storage with the upstream's reason (a KAITO preset
# Workspace has no field for a volume: providers/kaito/rules.py _preset_storage)
REFUSED_STORAGE = {("kaito", "vllm")}
STORAGE = [
    {"name": "cache", "purpose": "modelCache", "size": "50Gi"},
    {"name": "data", "claimName": "existing-data", "mountPath": "/data"},
]


def cases(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """(id, ModelDeployment) for every combination the shipped configs declare."""
    out = []
    for config in registry.configs.values():
        for engine, capability in sorted(config.engines.items()):
            devices = [d for d, ok in (("gpu", capability.gpu), ("cpu", capability.cpu)) if ok]
            for mode, device, gateway, storage in itertools.product(
                sorted(capability.serving_modes), devices, (False, True), (False, True)
            ):
                if storage and (config.name, engine) in REFUSED_STORAGE:
                    continue
                ident = "-".join(
                    [config.name, engine, mode, device]
                    + (["gw"] if gateway else [])
                    + (["pvc"] if storage else [])
                )
                out.append(
                    (ident, _deployment(config.name, engine, mode, device, gateway, storage))
                )
    if "dynamo" in registry.configs:
        out += [
            ("dynamo-vllm-aggregated-mocker", _mocker("aggregated")),
            ("dynamo-vllm-disaggregated-mocker", _mocker("disaggregated")),
        ]
    return out + _multinode(registry) + multinode_cases(registry)


def _multinode(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """A replica across two nodes (spec.engine.args.pipeline-parallel-size: "2") for every GPU
    engine and serving mode of every provider whose plug-in offers multi-node."""
    offered = {p.name for p in plugins() if p.multinode.offered}
    out = []
    for config in registry.configs.values():
        if config.name not in offered:
            continue
        for engine, capability in sorted(config.engines.items()):
            for mode in sorted(capability.serving_modes) if capability.gpu else ():
                if (config.name, mode) in MULTINODE_REFUSED:
                    continue
                obj = _deployment(config.name, engine, mode, "gpu", False, False)
                obj["metadata"]["name"] += "-pp2"
                obj["spec"]["engine"]["args"] = {"pipeline-parallel-size": "2"}
                out.append((f"{config.name}-{engine}-{mode}-gpu-pp2", obj))
    return out


# Offered providers' serving modes that admission refuses across nodes, with the reason there:
# llm-d's disaggregated pods (providers/llmd/pods.py admission_checks).
MULTINODE_REFUSED = {("llmd", "disaggregated")}


def multinode_cases(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """Each aggregated case of _multinode again, behind the gateway with the model cache."""
    out = []
    for ident, obj in _multinode(registry):
        if "-aggregated-" in ident:
            spec = {**obj["spec"], "gateway": {"enabled": True}}
            spec["model"] = {**spec["model"], "storage": {"volumes": [dict(v) for v in STORAGE]}}
            out.append((f"{ident}-gw-pvc", {**obj, "spec": spec}))
    return out


def _mocker(mode: str) -> dict[str, Any]:
    """AI Runway's mocker deployment: no engine (admission chooses vllm) and no GPUs; the
    disaggregated one with a storage volume, so its workers mount a claim."""
    obj = _deployment("dynamo", "vllm", mode, "cpu", False, mode == "disaggregated")
    obj["metadata"]["name"] = f"dynamo-mocker-{mode[:3]}"
    obj["metadata"]["annotations"] = dict(MOCKER)
    spec = obj["spec"]
    del spec["engine"]
    if mode == "disaggregated":
        spec["scaling"] = {"prefill": {"replicas": 1}, "decode": {"replicas": 2}}
    else:
        del spec["resources"]
    return obj


def _deployment(
    provider: str, engine: str, mode: str, device: str, gateway: bool, storage: bool
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "model": {"id": "org/model"},
        "provider": {"name": provider},
        "engine": {"type": engine},
        "serving": {"mode": mode},
    }
    if engine == "llamacpp":  # KAITO runs aikit's runner image on one GGUF file (direct mode)
        spec["model"]["id"] = "org/model/model.Q4_K_M.gguf"
    if mode == "disaggregated":
        spec["scaling"] = {
            "prefill": {"replicas": 1, "gpu": {"count": 2}},
            "decode": {"replicas": 1, "gpu": {"count": 1}},
        }
    elif device == "gpu":
        spec["resources"] = {"gpu": {"count": 2}}
    else:
        spec["resources"] = {"cpu": "4", "memory": "8Gi"}
    if gateway:
        spec["gateway"] = {"enabled": True}
    if storage:
        spec["model"]["storage"] = {"volumes": [dict(v) for v in STORAGE]}
    name = f"{provider}-{engine}-{mode[:3]}-{device}"
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "matrix"},
        "spec": spec,
    }


def engine_args(objects: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(catalog name, launch args) of every container among rendered objects that Runway starts
    with flags: the vLLM server of llm-d and Direct vLLM Deployments, and in a Dynamo graph each
    `python3 -m dynamo.<module> ...` by its module (`dynamo.sglang` -> dynamo-sglang): the
    workers (the engine's, or dynamo.mocker's), the frontend sidecars and any Frontend given
    arguments. A Frontend without arguments runs the operator's default command."""
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment":
            containers = obj["spec"]["template"]["spec"]["containers"]
            out += [("vllm", c["args"]) for c in containers if c["name"] == "vllm"]
        elif obj["kind"] == "LeaderWorkerSet":
            out += leader_engine_args(obj)
        elif obj["kind"] == "DynamoGraphDeployment":
            for service in obj["spec"]["services"].values():
                main = service.get("extraPodSpec", {}).get("mainContainer", {})
                for container in (main, service.get("frontendSidecar") or {}):
                    argv = [*container.get("command", ()), *container.get("args", ())]
                    if argv:
                        out.append(_module_args(argv))
    return out


def leader_engine_args(lws: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The leader's vLLM server of a multi-node LeaderWorkerSet (its workers run `ray start`,
    no engine flags)."""
    template = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    return [("vllm", c["args"]) for c in template["spec"]["containers"] if c["name"] == "vllm"]


def _module_args(argv: list[str]) -> tuple[str, list[str]]:
    """`python3 -m dynamo.vllm --model x` (command and args joined) -> (dynamo-vllm, [--model x])."""
    at = argv.index("-m")
    return argv[at + 1].replace(".", "-"), argv[at + 2 :]


def launched_catalogs(md: ModelDeployment) -> set[str]:
    """The catalogs of the entry points `md`'s rendered pods may start with flags: its engine's
    (the mocker's for the Dynamo test backend) and, on Dynamo, the frontend's."""
    if md.provider_name == "dynamo" and dynamo.is_test_backend(md):
        return {"dynamo-mocker", "dynamo-frontend"}
    plugin = {p.name: p for p in plugins()}[md.provider_name]
    engine = plugin.flags.catalog(md.engine_type)
    extra = {"dynamo-frontend"} if md.provider_name == "dynamo" else set()
    return ({engine} if engine else set()) | extra


@dataclass(frozen=True, slots=True)
class KaitoCase:
    """A KAITO ModelDeployment for one install (node auto-provisioning on or off) and one kind
    of model (a preset whose weights ship in its image, a gated preset downloaded at runtime, a
    preset KAITO generates from Hugging Face, llama.cpp on CPU and on GPU), with what its
    Workspace and route must then say."""

    ident: str
    obj: dict[str, Any]
    auto_provisioning: bool
    instance_type: str | None  # resource.instanceType
    access_secret: str | None  # inference.preset.presetOptions.modelAccessSecret
    served: str  # the name the pods answer to, which the HTTPRoute matches


KAITO_GPU_INSTANCE = "Standard_NC24ads_A100_v4"  # the shipped kaito config's annotations
KAITO_CPU_INSTANCE = "Standard_D16s_v5"
KAITO_MODELS = (
    # (kind, model.id, engine, GPUs, gives a token, rendered secret?, served name)
    (
        "in-image",
        "microsoft/Phi-3-mini-4k-instruct",
        "vllm",
        1,
        True,
        False,
        "phi-3-mini-4k-instruct",
    ),
    ("gated", "meta-llama/Llama-3.1-8B-Instruct", "vllm", 1, True, True, "llama-3.1-8b-instruct"),
    ("generated", "Qwen/Qwen3-8B", "vllm", 1, False, False, "qwen3-8b"),
    # llama.cpp in its three modes (providers/kaito/aikit.py): a GGUF on aikit's runner
    # (direct), built into an image in the cluster (built), and a pre-made aikit image
    *(
        (f"{mode}-{device}", model_id, "llamacpp", gpus, False, False, served)
        for mode, model_id, served in (
            ("direct", "org/model/model.Q4_K_M.gguf", "model.Q4_K_M"),
            ("built", "org/model/model.Q4_K_M.gguf", "model.Q4_K_M"),
            ("premade", None, "llama-3.2-1b-instruct"),
        )
        for device, gpus in (("cpu", 0), ("gpu", 1))
    ),
)
KAITO_BUILT = {"kaito.airunway.ai/gguf-mode": "built"}
KAITO_PREMADE_IMAGE = "ghcr.io/kaito-project/aikit/llama3.2:1b"


def kaito_cases() -> list[KaitoCase]:
    """Every KAITO model kind above, with and without node auto-provisioning, behind the gateway."""
    out = []
    for nap, (kind, model_id, engine, gpus, token, secret, served) in itertools.product(
        (True, False), KAITO_MODELS
    ):
        device = "gpu" if gpus else "cpu"
        obj = _deployment("kaito", engine, "aggregated", device, True, False)
        obj["metadata"]["name"] = f"kaito-{kind}-{'nap' if nap else 'byo'}"
        spec = obj["spec"]
        if model_id is None:  # a pre-made image: the source is custom, the image is the model
            spec["model"] = {"source": "custom"}
            spec["engine"]["image"] = KAITO_PREMADE_IMAGE
        else:
            spec["model"]["id"] = model_id
        if kind.startswith("built"):
            obj["metadata"]["annotations"] = dict(KAITO_BUILT)
        if gpus:
            spec["resources"] = {"gpu": {"count": gpus}}
        if token:
            spec["secrets"] = {"huggingFaceToken": "hf-token"}
        instance = (KAITO_GPU_INSTANCE if gpus else KAITO_CPU_INSTANCE) if nap else None
        out.append(
            KaitoCase(
                obj["metadata"]["name"], obj, nap, instance, "hf-token" if secret else None, served
            )
        )
    return out


def byo_registry() -> ProviderRegistry:
    """The shipped configs, with KAITO on the platform's own nodes (no node auto-provisioning)."""
    configs = bundled_config_objects()
    for config in configs:
        if config["metadata"]["name"] == "kaito":
            config["metadata"]["annotations"]["kaito.airunway.ai/node-auto-provisioning"] = "false"
    return build_registry(configs)
