"""KAITO (at KAITO_VERSION, pkg/workspace/manifests/manifests.go) labels the preset StatefulSet's pods
with kaito.sh/workspace=<Workspace name> only; a template Workspace's pods get the template's
labels plus that one. Presets serve on 5000 (consts.PortInferenceServer); Runway's llama.cpp
template passes --address=:5000."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import PodGroup, Pods
from core.rendering.invariants import ref

WORKSPACE_LABEL = "kaito.sh/workspace"
PORT = 5000


def pool_selector(md: ModelDeployment) -> dict[str, str]:
    return {WORKSPACE_LABEL: md.name}


def model_port(md: ModelDeployment) -> int:
    return PORT


def operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    groups = []
    for obj in objects:
        if obj.get("kind") == "Workspace":
            template = dig(obj, "inference", "template", "metadata", "labels") or {}
            labels = {**template, WORKSPACE_LABEL: dig(obj, "metadata", "name")}
            where = f"{ref(obj)} pods (KAITO labels them {WORKSPACE_LABEL})"
            groups.append(PodGroup(where, labels, PORT, ref(obj), "KAITO's inference port"))
    return groups


PODS = Pods(pool_selector, model_port, operator_pods)
