"""KubeRay: one ray.io RayService per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. The engine answers to the name the spec gives it (Runway passes it to
Ray Serve LLM as the model_id). Ray Serve LLM takes engine kwargs, not command-line flags: the
catalog `kuberay` lists the ones it accepts and flags.py those Runway or Ray set (flags.py);
rules.py refuses what a RayService cannot carry. A replica spans worker pods when
pipeline-parallel-size > 1 (render.py), and invariants.py shows each Ray Serve LLM config to the
core's GPU invariant.
"""

from dataclasses import replace

from core.model.plugin import MultiNode, PodSecurity, Provider
from providers.kuberay.flags import FLAGS
from providers.kuberay.invariants import invariants, serving_containers
from providers.kuberay.overrides import NAME, OVERRIDES
from providers.kuberay.pods import PODS
from providers.kuberay.render import render
from providers.kuberay.rules import RULES
from providers.kuberay.status import WATCHED, operator_service

# Restricted: the Ray image runs as the numeric user 1000 (ray's docker/base-deps/Dockerfile
# `USER $RAY_UID`, RAY_UID=1000; ray-llm builds on it), so its pods run with runAsNonRoot and no
# capabilities (render.py). KubeRay <KUBERAY_VERSION> adds to a worker pod only the wait-gcs-ready
# init container, with a copy of the Ray container's securityContext
# (ray-operator/controllers/ray/common/pod.go:241-268), and to the head an autoscaler only with
# enableInTreeAutoscaling, which Runway leaves off (pod.go:181-195).
POD_SECURITY = PodSecurity()
PROVIDER = Provider(
    NAME,
    OVERRIDES,
    render,
    replace(PODS, operator_service=operator_service),
    WATCHED,
    rules=RULES,
    flags=FLAGS,
    invariants=invariants,
    serving_containers=serving_containers,
    multinode=MultiNode(offered=True),
    pod_security=POD_SECURITY,
)
