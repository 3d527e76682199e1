"""NVIDIA Dynamo: one nvidia.com DynamoGraphDeployment per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. The operator creates and owns the InferencePool
(managesInferencePool), so Runway renders no pool and no selector: the template defaults are
never asked for one, and its picker is the provider config's.
"""

from dataclasses import replace

from core.model.plugin import MultiNode, Provider
from core.rendering.pods import TEMPLATE_PODS
from core.rendering.podsecurity import root_image
from providers.dynamo.flags import FLAGS
from providers.dynamo.invariants import invariants, serving_containers
from providers.dynamo.overrides import NAME, OVERRIDES
from providers.dynamo.render import is_test_backend, render
from providers.dynamo.rules import RULES
from providers.dynamo.status import WATCHED, operator_service

# The pods are the operator's, built from each service's extraPodSpec and mainContainer, which carry
# the root-image securityContext (render.py _hardened); the operator adds fsGroup 1000 when none is
# given (deploy/operator/internal/dynamo/graph.go applyDefaultSecurityContext), which every level
# allows.
POD_SECURITY = root_image(
    "Dynamo's operator builds the pods: it adds containers of its own beside mainContainer (the "
    "frontendSidecar, from an image and args, with no securityContext field), and the runtime "
    "images run as the user dynamo by name (container/templates/*_runtime.Dockerfile `USER "
    "dynamo`, uid 1000), which runAsNonRoot cannot verify without a runAsUser that the "
    "dynamo-planner and dynamo-frontend images were not shown to support"
)
PROVIDER = Provider(
    NAME,
    OVERRIDES,
    render,
    replace(TEMPLATE_PODS, operator_service=operator_service),
    WATCHED,
    rules=RULES,
    flags=FLAGS,
    invariants=invariants,
    serving_containers=serving_containers,
    is_test_backend=is_test_backend,
    test_backend_reason="auto-selected: the dynamo mocker test backend runs only vllm",
    # Every engine: the operator turns a worker's multinode.nodeCount into a multi-node launch
    # for vLLM, SGLang and TRT-LLM alike (render.py _worker; rules.py checks overrides agree).
    multinode=MultiNode(offered=True),
    pod_security=POD_SECURITY,
)
