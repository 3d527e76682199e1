"""The serving pods whose template Runway renders itself, and the default every provider whose
pods carry the template's labels uses: the pool selects airunway.ai/model-deployment, and the
server listens on the HTTP port (8000): TEMPLATE_PODS, the Pods value a provider names for
them. An operator that labels its pods itself says so in its package. A provider whose
Deployments Runway renders takes their overrides from deployment_overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.checks.overrides import check_accepted, check_no_pod_spec, object_roots
from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment
from core.model.plugin import Overrides, Pods, UpstreamKind
from core.rendering.common import HTTP_PORT, LABEL_MODEL_DEPLOYMENT

# The kind of the serving Deployments Runway renders itself (core/rendering/common.py
# deployment_and_service): what a provider that renders them watches.
DEPLOYMENTS = UpstreamKind("apps", "v1", "deployments", "Deployment")


def template_selector(md: ModelDeployment) -> dict[str, str]:
    """The label every pod template Runway renders for `md` carries."""
    return {LABEL_MODEL_DEPLOYMENT: md.name}


def template_port(md: ModelDeployment) -> int:
    """The port the model server in Runway's own pod templates listens on."""
    return HTTP_PORT


# Pods whose template Runway renders (Direct vLLM's and llm-d's Deployments), or whose operator
# keeps the template's labels and port.
TEMPLATE_PODS = Pods(template_selector, template_port)


@dataclass(frozen=True, slots=True)
class _DeploymentSpec:
    """Layer 2 of `provider`'s overrides when Runway renders its Deployments."""

    provider: str

    def check(self, overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
        """Only `spec`, an object, and never its `template.spec` (see check_no_pod_spec)."""
        accepted = check_accepted(overrides, self.provider, object_roots("spec"), at)
        return accepted + check_no_pod_spec(overrides, at)


def deployment_overrides(provider: str) -> Overrides:
    """Layer 2 of spec.provider.overrides for `provider`, whose Deployments Runway renders: the
    one root `spec`, merged into each Deployment spec, never its `template.spec`."""
    return Overrides(frozenset({"spec"}), _DeploymentSpec(provider).check)
