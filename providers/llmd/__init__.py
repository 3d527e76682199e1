"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split).

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No admission rules of its own beyond layer 2 of the overrides; the
engine answers to the name the spec gives it. The pods run the vLLM OpenAI server of the pinned
vLLM image, whose catalog is `vllm` (providers/vllm/catalogs/vllm.json, `make flags`); Runway
owns the server's host and port besides the engine flags it derives from the spec. Runway
renders the Deployments itself, so the pods carry the template labels and the pool selects them.
An aggregated replica across nodes (pipeline-parallel-size > 1) is a LeaderWorkerSet group
(core/rendering/leaderworkerset.py): the pool and the Service select its leaders.
"""

from core.checks.flags import VLLM_SERVER_FLAGS
from core.model.plugin import MultiNode, Provider
from core.rendering.leaderworkerset import VLLM_PODS, serving_containers
from core.rendering.podsecurity import VLLM_IMAGE
from providers.llmd.invariants import invariants
from providers.llmd.overrides import NAME, OVERRIDES
from providers.llmd.pods import RULES
from providers.llmd.render import render
from providers.llmd.status import WATCHED

PROVIDER = Provider(
    NAME,
    OVERRIDES,
    render,
    VLLM_PODS,
    WATCHED,
    rules=RULES,
    flags=VLLM_SERVER_FLAGS,
    invariants=invariants,
    serving_containers=serving_containers,
    multinode=MultiNode(offered=True),
    pod_security=VLLM_IMAGE,
)
