"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server.

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from providers.vllm.flags import flag_catalog, owned_flags
from providers.vllm.overrides import NAME, OVERRIDE_ROOTS, check_overrides
from providers.vllm.pods import model_port, operator_pods, pool_selector
from providers.vllm.render import admission_checks, is_test_backend, render

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
