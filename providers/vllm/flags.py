"""Direct vLLM: the flag catalog its pods run, and the flags Runway owns there.

The pods run the vLLM OpenAI server of the pinned vLLM image: the catalog `vllm`
(providers/vllm/flags/vllm.json, `make flags`).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.checks.flags import VLLM_SERVER_OWNED
from core.model.kinds import Engine

CATALOG = "vllm"


def flag_catalog(engine: str) -> str | None:
    return CATALOG if engine == Engine.VLLM else None


def owned_flags(catalog: str) -> Mapping[str, str]:
    return VLLM_SERVER_OWNED if catalog == CATALOG else {}
