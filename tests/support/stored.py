"""A ModelDeployment as the API server stores it once admitted: hydrated, with its stamps."""

from __future__ import annotations

from typing import Any

from core.admission.pipeline import admit
from tests.support.builders import model_deployment, shipped_registry

SHIPPED = shipped_registry()


def stored(generation: int = 4, **spec: Any) -> dict[str, Any]:
    """An admitted Direct vLLM ModelDeployment as the API server stores it."""
    obj = model_deployment("m", "ns", provider="vllm", engine="vllm", gpu=1, **spec)
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    out = dict(admission.obj)
    out["metadata"] = {**out["metadata"], "generation": generation}
    return out
