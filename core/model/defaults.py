"""Defaulting of a ModelDeployment: the CRD schema defaults plus the admission defaults.

The result is what the API server would store after the mutating webhook ran, so a hydrated
object rendered to Git and applied again changes nothing (zero drift). Order as AI Runway's
webhook: source, serving mode, replicas, GPU default, GPU types, engine flags, volumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.jsonvalue import json_copy
from core.model.kinds import DEFAULT_GPU_TYPE, Engine, ModelSource, ServingMode, VolumePurpose

DEFAULT_MOUNT_PATHS = {
    VolumePurpose.MODEL_CACHE: "/model-cache",
    VolumePurpose.COMPILATION_CACHE: "/compilation-cache",
}
ENGINE_FLAG_DEFAULTS = (
    ("enablePrefixCaching", True),
    ("enforceEager", False),
    ("trustRemoteCode", False),
)


def with_defaults(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a structurally valid ModelDeployment with every default filled in."""
    out: dict[str, Any] = json_copy(dict(obj))
    spec = out.setdefault("spec", {})
    name = out.get("metadata", {}).get("name") or ""
    model = spec.setdefault("model", {})
    if not model.get("source"):
        model["source"] = ModelSource.HUGGINGFACE.value
    serving = spec.setdefault("serving", {})
    if not serving.get("mode"):
        serving["mode"] = ServingMode.AGGREGATED.value
    aggregated = serving["mode"] == ServingMode.AGGREGATED
    if aggregated and "scaling" not in spec:
        spec["scaling"] = {"replicas": 1}
    _fill_scaling(spec.get("scaling"))
    engine = spec.setdefault("engine", {})
    if _wants_default_gpu(spec, aggregated):
        spec["resources"] = {"gpu": {"count": 1, "type": DEFAULT_GPU_TYPE}}
    _fill_gpu(spec.get("resources"))
    for flag, value in ENGINE_FLAG_DEFAULTS:
        engine.setdefault(flag, value)
    for volume in model.get("storage", {}).get("volumes", ()):
        _fill_volume(volume, name)
    return out


def _wants_default_gpu(spec: Mapping[str, Any], aggregated: bool) -> bool:
    engine_type = spec["engine"].get("type") or ""
    return (
        aggregated
        and spec.get("resources") is None
        and engine_type not in ("", Engine.LLAMACPP)
        and not spec.get("image")
    )


def _fill_scaling(scaling: dict[str, Any] | None) -> None:
    if scaling is None:
        return
    scaling.setdefault("replicas", 1)
    for component in ("prefill", "decode"):
        part = scaling.get(component)
        if isinstance(part, dict):
            part.setdefault("replicas", 1)
            _fill_gpu(part)


def _fill_gpu(holder: dict[str, Any] | None) -> None:
    gpu = holder.get("gpu") if holder else None
    if isinstance(gpu, dict):
        gpu.setdefault("count", 0)
        if not gpu.get("type"):
            gpu["type"] = DEFAULT_GPU_TYPE


def _fill_volume(volume: dict[str, Any], md_name: str) -> None:
    if not volume.get("purpose"):
        volume["purpose"] = VolumePurpose.CUSTOM.value
    volume.setdefault("readOnly", False)
    if not volume.get("mountPath") and volume["purpose"] in DEFAULT_MOUNT_PATHS:
        volume["mountPath"] = DEFAULT_MOUNT_PATHS[VolumePurpose(volume["purpose"])]
    if volume.get("size") is not None:
        if not volume.get("claimName") and md_name:
            volume["claimName"] = managed_claim_name(md_name, volume.get("name", ""))
        if not volume.get("accessMode"):
            volume["accessMode"] = "ReadWriteMany"


def managed_claim_name(md_name: str, volume_name: str) -> str:
    """The PVC name of a managed (size-set) volume: <md>-<volume>."""
    return f"{md_name}-{volume_name}"
