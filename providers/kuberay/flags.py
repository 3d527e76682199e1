"""KubeRay: the engine kwargs Ray Serve LLM accepts, and the ones Runway (or Ray) sets itself.

Ray Serve LLM starts vLLM from `engine_kwargs`, not from a command line: Ray <RAY_VERSION> splits
them into vLLM's FrontendArgs and AsyncEngineArgs dataclass fields and refuses any other key
("Unknown engine argument", ray/llm/_internal/serve/engines/vllm/vllm_models.py:163-177 in the
ray wheel). The catalog `kuberay` (providers/kuberay/catalogs/kuberay.json) lists exactly those
fields as flags (`--max-model-len` for max_model_len, `--no-x` for a boolean x, as the renderer
reads spec.engine.args), taken from vLLM 0.18.0, the floor ray[llm]==<RAY_VERSION> declares
(`vllm[audio]>=0.18.0`), which the parser tier (tools/parsers) also runs Ray's own split against.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.checks.flags import DISAGG, VLLM_ENGINE_OWNED
from core.model.kinds import Engine
from core.model.plugin import Flags

CATALOG = "kuberay"
EXECUTOR = (
    "Ray Serve LLM sets it: ray on GPUs, mp on CPUs, and refuses any other value on GPUs "
    "(the pinned Ray's ray/llm/_internal/serve/engines/vllm/vllm_models.py:107-121)"
)
SERVE_PORT = (
    "Ray Serve's HTTP proxy serves the model on port 8000 (the RayService's serve port); vLLM's "
    "own API server does not run under Ray Serve LLM, so this would change nothing"
)
# VLLM_ENGINE_OWNED but --kv-transfer-config (the renderer honours a user's connector: Ray's P/D
# builder needs one on both sides, and NIXL is only Runway's default) and the short aliases
# (-tp, -pp: vLLM's command-line spellings, which no engine kwarg has).
OWNED: Mapping[str, str] = {
    **{
        flag: why
        for flag, why in VLLM_ENGINE_OWNED.items()
        if why != DISAGG and flag.startswith("--")
    },
    "--distributed-executor-backend": EXECUTOR,
    "--host": SERVE_PORT,
    "--port": SERVE_PORT,
    "--uds": SERVE_PORT,
}


def flag_catalog(engine: str) -> str | None:
    return CATALOG if engine == Engine.VLLM else None


def owned_flags(catalog: str) -> Mapping[str, str]:
    return OWNED if catalog == CATALOG else {}


FLAGS = Flags(flag_catalog, owned_flags)
