"""NVIDIA Dynamo's endpoint picker (the Epp service behind a gateway): its plugins and profiles,
and the env Dynamo's own GAIE graphs give it: the KV block size the workers really run and the
model name they serve (examples/backends/vllm/deploy/gaie/agg.yaml sets DYN_KV_CACHE_BLOCK_SIZE
to the worker's --block-size and DYN_MODEL_NAME to its --served-model-name)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.versions import Versions
from core.rendering.common import flag

# The KV block each engine runs, as (its spec.engine.args key, the size when it is absent):
# - vLLM: --block-size; absent, dynamo.vllm <DYNAMO_VERSION> leaves it to vLLM at run time
#   (dynamo/vllm/args.py:232-234), where the CUDA platform's default is 16 (vllm/platforms/cuda.py
#   check_and_update_config). Behind a gateway Runway passes --block-size 16 so the picker's size
#   and the engine's cannot drift apart;
# - SGLang: --page-size, which dynamo.sglang <DYNAMO_VERSION> registers as the KV block size
#   (dynamo/sglang/register.py:58); 16 is what Dynamo's own SGLang deploy examples pass, and
#   Runway passes it behind a gateway (SGLang's own default page is one token);
# - TRT-LLM: dynamo.trtllm <DYNAMO_VERSION>'s --kv-block-size (dynamo/trtllm/backend_args.py:78-84, default
#   32), the size its KV events report; TensorRT-LLM's own tokens_per_block default is 32 too.
#   Runway passes no flag for it.
BLOCK: Mapping[str, tuple[str, int, bool]] = {
    "vllm": ("block-size", 16, True),
    "sglang": ("page-size", 16, True),
    "trtllm": ("kv-block-size", 32, False),
}


def block_size(md: ModelDeployment) -> str:
    """The KV block size `md`'s workers run: the user's own engine arg, else the engine's size."""
    key, default, _ = BLOCK[md.engine_type]
    value = (md.engine.get("args") or {}).get(key)
    return str(value) if value not in (None, "") else str(default)


def block_flag(md: ModelDeployment) -> list[str]:
    """The worker's block-size flag behind a gateway, when Runway passes one and the user does
    not (their own arg is in the worker's args already)."""
    key, default, passed = BLOCK[md.engine_type]
    return flag(key, str(default)) if passed and key not in (md.engine.get("args") or {}) else []


def epp(
    md: ModelDeployment, overrides: Mapping[str, Any], pins: Versions, served: str
) -> dict[str, Any]:
    """Dynamo's endpoint picker: with it, the operator creates and owns the InferencePool."""
    split = md.is_disaggregated
    own = overrides.get("epp") or {}
    image = own.get("image") or f"nvcr.io/nvidia/ai-dynamo/dynamo-frontend:{pins.pin('dynamo')}"
    plugins = [
        {"name": "disagg-profile-handler", "type": "disagg-profile-handler"},
        _label_filter("decode-filter", "decode", allows_no_label=not split),
        {"name": "picker", "type": "max-score-picker"},
        {"name": "dyn-decode", "type": "dyn-decode-scorer"},
    ]
    profiles = [_profile("decode", "decode-filter", "dyn-decode")]
    if split:
        plugins += [
            _label_filter("prefill-filter", "prefill", allows_no_label=False),
            {"name": "dyn-prefill", "type": "dyn-prefill-scorer"},
        ]
        profiles.insert(0, _profile("prefill", "prefill-filter", "dyn-prefill"))
    return {
        "componentType": "epp",
        "replicas": int(own.get("replicas", 1)),
        "extraPodSpec": {"mainContainer": {"image": image}},
        "envs": [
            {"name": "DYN_KV_CACHE_BLOCK_SIZE", "value": block_size(md)},
            {"name": "DYN_MODEL_NAME", "value": served},
            {"name": "DYN_DECODE_FALLBACK", "value": "false" if split else "true"},
            {"name": "DYN_ENFORCE_DISAGG", "value": "true" if split else "false"},
        ],
        "eppConfig": {"config": {"plugins": plugins, "schedulingProfiles": profiles}},
    }


def _label_filter(name: str, role: str, *, allows_no_label: bool) -> dict[str, Any]:
    parameters = {
        "label": "nvidia.com/dynamo-sub-component-type",
        "validValues": [role],
        "allowsNoLabel": allows_no_label,
    }
    return {"name": name, "type": "label-filter", "parameters": parameters}


def _profile(name: str, filter_name: str, scorer: str) -> dict[str, Any]:
    return {
        "name": name,
        "plugins": [
            {"pluginRef": filter_name},
            {"pluginRef": scorer, "weight": 1},
            {"pluginRef": "picker"},
        ],
    }
