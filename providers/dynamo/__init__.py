"""NVIDIA Dynamo: one nvidia.com DynamoGraphDeployment per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. The operator creates and owns the InferencePool
(managesInferencePool), so Runway renders no pool and no selector: the template defaults are
never asked for one, and its picker is the provider config's.
"""

from core.model.plugin import Provider, UpstreamKind
from core.rendering.pods import template_port, template_selector
from providers.dynamo.flags import flag_catalog, owned_flags
from providers.dynamo.invariants import invariants, serving_containers
from providers.dynamo.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.dynamo.render import is_test_backend, render
from providers.dynamo.rules import admission_checks
from providers.dynamo.status import workload_status

PROVIDER = Provider(
    name=NAME,
    override_roots=OVERRIDE_ROOTS,
    check_overrides=check_overrides,
    render=render,
    pool_selector=template_selector,
    model_port=template_port,
    workload_status=workload_status,
    kinds=(
        UpstreamKind("nvidia.com", "v1alpha1", "dynamographdeployments", "DynamoGraphDeployment"),
    ),
    serving_containers=serving_containers,
    admission_checks=admission_checks,
    invariants=invariants,
    flag_catalog=flag_catalog,
    owned_flags=owned_flags,
    is_test_backend=is_test_backend,
    test_backend_reason="auto-selected: the dynamo mocker test backend runs only vllm",
)
