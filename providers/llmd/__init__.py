"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split).

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No admission rules of its own beyond layer 2 of the overrides; the
engine answers to the name the spec gives it. The pods run the vLLM OpenAI server of the pinned
vLLM image, whose catalog is `vllm` (providers/vllm/catalogs/vllm.json, `make flags`); Runway
owns the server's host and port besides the engine flags it derives from the spec. Runway
renders the Deployments itself, so the pods carry the template labels and the pool selects them.
"""

from core.checks.flags import vllm_server_catalog, vllm_server_owned
from core.model.plugin import Provider
from core.rendering.pods import DEPLOYMENTS, template_port, template_selector
from providers.llmd.invariants import invariants
from providers.llmd.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.llmd.pods import picker_config
from providers.llmd.render import render
from providers.llmd.status import workload_status

PROVIDER = Provider(
    name=NAME,
    override_roots=OVERRIDE_ROOTS,
    check_overrides=check_overrides,
    render=render,
    pool_selector=template_selector,
    model_port=template_port,
    workload_status=workload_status,
    kinds=(DEPLOYMENTS,),
    picker_config=picker_config,
    invariants=invariants,
    flag_catalog=vllm_server_catalog,
    owned_flags=vllm_server_owned,
)
