"""Direct vLLM: apps/v1 Deployment and v1 Service running the vLLM OpenAI server.

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from core.model.plugin import (
    UpstreamKind,
    configured_picker,
    no_invariants,
    no_test_backend,
)
from providers.vllm.flags import flag_catalog as flag_catalog
from providers.vllm.flags import owned_flags as owned_flags
from providers.vllm.overrides import NAME as NAME
from providers.vllm.overrides import OVERRIDE_ROOTS as OVERRIDE_ROOTS
from providers.vllm.overrides import check_overrides as check_overrides
from providers.vllm.pods import model_port as model_port
from providers.vllm.pods import operator_pods as operator_pods
from providers.vllm.pods import pool_selector as pool_selector
from providers.vllm.render import render as render
from providers.vllm.rules import admission_checks as admission_checks
from providers.vllm.rules import served_as as served_as
from providers.vllm.status import workload_status as workload_status

is_test_backend = no_test_backend  # the engine always runs
picker_config = configured_picker  # the pool's picker runs the provider config's
invariants = no_invariants  # the core's invariants cover its wiring
UPSTREAM_KINDS = (
    UpstreamKind("apps", "v1", "deployments", "Deployment"),
)  # what its status hook reads
