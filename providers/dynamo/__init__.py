"""NVIDIA Dynamo: one nvidia.com DynamoGraphDeployment per ModelDeployment.

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from providers.dynamo.flags import flag_catalog, owned_flags
from providers.dynamo.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.dynamo.pods import model_port, operator_pods, pool_selector
from providers.dynamo.render import admission_checks, is_test_backend, render

__all__ = [
    "NAME",
    "OVERRIDE_ROOTS",
    "admission_checks",
    "check_overrides",
    "flag_catalog",
    "is_test_backend",
    "model_port",
    "operator_pods",
    "owned_flags",
    "pool_selector",
    "render",
]
