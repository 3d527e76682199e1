"""The serving pods whose template Runway renders itself, and the default every provider whose
pods carry the template's labels uses: the pool selects airunway.ai/model-deployment, and the
server listens on the HTTP port (8000). Each provider states its own rule in
providers/<name>/pods.py; an operator that labels its pods itself says so there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import PodGroup
from core.rendering.common import HTTP_PORT, LABEL_MODEL_DEPLOYMENT


def template_selector(md: ModelDeployment) -> dict[str, str]:
    """The label every pod template Runway renders for `md` carries."""
    return {LABEL_MODEL_DEPLOYMENT: md.name}


def template_port(md: ModelDeployment) -> int:
    """The port the model server in Runway's own pod templates listens on."""
    return HTTP_PORT


def no_operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    """For a provider whose serving pods are Runway's own Deployments (their templates say the
    labels), or whose operator selects its pods itself."""
    return []
