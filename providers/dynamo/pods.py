"""NVIDIA Dynamo: the operator creates and owns the InferencePool (managesInferencePool), so
Runway renders no pool and no selector; the defaults below are never asked for a pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import PodGroup
from core.rendering.pods import template_port, template_selector


def pool_selector(md: ModelDeployment) -> dict[str, str]:
    return template_selector(md)


def model_port(md: ModelDeployment) -> int:
    return template_port(md)


def operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    return []  # the operator's own pool selects its pods
