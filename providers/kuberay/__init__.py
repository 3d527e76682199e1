"""KubeRay: one ray.io RayService per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No admission rules of its own beyond layer 2 of the overrides, the
engine answers to the name the spec gives it (Runway passes it to vLLM), and no flag catalog:
Ray Serve LLM takes engine kwargs, not command-line flags.
"""

from dataclasses import replace

from core.model.plugin import Provider
from providers.kuberay.overrides import NAME, OVERRIDES
from providers.kuberay.pods import PODS
from providers.kuberay.render import render
from providers.kuberay.status import WATCHED, operator_service

PROVIDER = Provider(
    NAME, OVERRIDES, render, replace(PODS, operator_service=operator_service), WATCHED
)
