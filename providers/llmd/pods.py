"""llm-d: Runway renders the Deployments itself, so the pods carry the template labels
(airunway.ai/model-deployment, app.kubernetes.io/component, podTemplate labels) and the server
listens on --port 8000."""

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
    return []  # no operator: the Deployments' templates are the pods
