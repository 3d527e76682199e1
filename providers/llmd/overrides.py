"""llm-d: layer 2 of spec.provider.overrides, what its upstream object accepts: Runway renders
its Deployments, so `spec` only (core/rendering/pods.py deployment_overrides)."""

from core.rendering.pods import deployment_overrides

NAME = "llmd"
OVERRIDES = deployment_overrides(NAME)
