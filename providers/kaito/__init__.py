"""KAITO: one kaito.sh Workspace per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No flag catalog: presets take no flags from the spec, and the llama.cpp
template always runs the user's image (there is no default to catalogue).
"""

from core.model.plugin import Provider, UpstreamKind
from providers.kaito.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.kaito.pods import model_port, operator_pods, pool_selector
from providers.kaito.render import render
from providers.kaito.rules import admission_checks, served_as
from providers.kaito.status import workload_status

PROVIDER = Provider(
    name=NAME,
    override_roots=OVERRIDE_ROOTS,
    check_overrides=check_overrides,
    render=render,
    pool_selector=pool_selector,
    model_port=model_port,
    workload_status=workload_status,
    kinds=(UpstreamKind("kaito.sh", "v1beta1", "workspaces", "Workspace"),),
    operator_pods=operator_pods,
    admission_checks=admission_checks,
    served_as=served_as,
)
