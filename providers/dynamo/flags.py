"""NVIDIA Dynamo: the flag catalog of each engine's worker entry point, and the flags Runway owns.

The catalogs are providers/dynamo/catalogs/dynamo-<engine>.json (`make flags`).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.checks.flags import (
    CONTEXT,
    DISAGG,
    EAGER,
    MODEL,
    PP,
    PREFIX,
    SERVED,
    TP,
    TRUST,
    VLLM_ENGINE_OWNED,
)
from core.model.kinds import Engine
from core.model.plugin import Flags

ENGINES = (Engine.VLLM, Engine.SGLANG, Engine.TRTLLM)
OWNED: Mapping[str, Mapping[str, str]] = {
    "dynamo-vllm": {**VLLM_ENGINE_OWNED, "--disaggregation-mode": DISAGG},
    "dynamo-sglang": {
        "--model-path": MODEL,
        "--model": MODEL,
        "--served-model-name": SERVED,
        "--tensor-parallel-size": TP,
        "--tp-size": TP,
        "--pipeline-parallel-size": PP,
        "--pp-size": PP,
        "--context-length": CONTEXT,
        "--trust-remote-code": TRUST,
        "--disable-radix-cache": PREFIX,
        "--disable-cuda-graph": EAGER,
        "--disaggregation-mode": DISAGG,
    },
    "dynamo-trtllm": {
        "--model": MODEL,
        "--model-path": MODEL,
        "--served-model-name": SERVED,
        "--tensor-parallel-size": TP,
        "--pipeline-parallel-size": PP,
        "--max-seq-len": CONTEXT,
        "--disaggregation-mode": DISAGG,
    },
}


def flag_catalog(engine: str) -> str | None:
    return f"dynamo-{engine}" if engine in ENGINES else None


def owned_flags(catalog: str) -> Mapping[str, str]:
    return OWNED.get(catalog, {})


FLAGS = Flags(flag_catalog, owned_flags)
