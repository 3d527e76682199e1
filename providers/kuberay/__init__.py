"""KubeRay: one ray.io RayService per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No admission rules of its own beyond layer 2 of the overrides, the
engine answers to the name the spec gives it (Runway passes it to vLLM), and no flag catalog:
Ray Serve LLM takes engine kwargs, not command-line flags.
"""

from core.model.plugin import Provider, UpstreamKind
from providers.kuberay.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.kuberay.pods import model_port, operator_pods, pool_selector
from providers.kuberay.render import render
from providers.kuberay.status import workload_status

PROVIDER = Provider(
    name=NAME,
    override_roots=OVERRIDE_ROOTS,
    check_overrides=check_overrides,
    render=render,
    pool_selector=pool_selector,
    model_port=model_port,
    workload_status=workload_status,
    kinds=(UpstreamKind("ray.io", "v1", "rayservices", "RayService"),),
    operator_pods=operator_pods,
)
