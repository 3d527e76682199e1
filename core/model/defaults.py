"""Defaulting of a ModelDeployment: the CRD schema defaults plus the admission defaults.

The result is what the API server would store after the mutating webhook ran, so a hydrated
object rendered to Git and applied again changes nothing (zero drift). Order as AI Runway's
webhook: source, serving mode, replicas, GPU default, GPU types, engine flags, volumes.

Defaults are written into copies of the mappings (and lists) they may change, made on the way
down; every other value is the input's own (`defaulted`). A diff then finds what changed by
identity wherever nothing did, and the input is never changed.
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
    out: dict[str, Any] = json_copy(defaulted(obj))
    return out


def defaulted(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with every default filled in, sharing with `obj` each value defaulting leaves as
    it is (neither may be changed afterwards: copy with json_copy first). Structurally valid
    objects only (core.admission.hydrate.structure_errors)."""
    out = dict(obj)
    spec = own(out, "spec")
    name = out.get("metadata", {}).get("name") or ""
    model = own(spec, "model")
    if not model.get("source"):
        model["source"] = ModelSource.HUGGINGFACE.value
    serving = own(spec, "serving")
    if not serving.get("mode"):
        serving["mode"] = ServingMode.AGGREGATED.value
    aggregated = serving["mode"] == ServingMode.AGGREGATED
    if aggregated and "scaling" not in spec:
        spec["scaling"] = {"replicas": 1}
    if spec.get("scaling") is not None:
        _fill_scaling(own(spec, "scaling"))
    engine = own(spec, "engine")
    if _wants_default_gpu(spec, aggregated):
        spec["resources"] = {"gpu": {"count": 1, "type": DEFAULT_GPU_TYPE}}
    if spec.get("resources"):
        _fill_gpu(own(spec, "resources"))
    for flag, value in ENGINE_FLAG_DEFAULTS:
        engine.setdefault(flag, value)
    volumes = model.get("storage", {}).get("volumes", ())
    if type(volumes) is list and volumes:
        volumes = own(own(model, "storage"), "volumes")
        for i, item in enumerate(volumes):
            volume = volumes[i] = dict(item) if type(item) is dict else item
            _fill_volume(volume, name)
    else:  # not a list: as many mistakes as before (none passes the structure check)
        for volume in volumes:
            _fill_volume(volume, name)
    return out


def own(parent: dict[str, Any], key: str) -> Any:
    """parent[key] as a copy of its own, set into `parent` (which must be a copy already); a
    new empty mapping when the key is absent (as setdefault). Only a dict or a list is copied:
    any other value is returned as it is, and code meant for a mapping fails on it as before."""
    value = parent.get(key) if key in parent else {}
    if type(value) is dict:
        value = dict(value)
    elif type(value) is list:
        value = list(value)
    parent[key] = value
    return value


def _wants_default_gpu(spec: Mapping[str, Any], aggregated: bool) -> bool:
    engine_type = spec["engine"].get("type") or ""
    return (
        aggregated
        and spec.get("resources") is None
        and engine_type not in ("", Engine.LLAMACPP)
        and not spec.get("image")
    )


def _fill_scaling(scaling: dict[str, Any]) -> None:
    scaling.setdefault("replicas", 1)
    for component in ("prefill", "decode"):
        if isinstance(scaling.get(component), dict):
            part = own(scaling, component)
            part.setdefault("replicas", 1)
            _fill_gpu(part)


def _fill_gpu(holder: dict[str, Any]) -> None:
    if isinstance(holder.get("gpu"), dict):
        gpu = own(holder, "gpu")
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
