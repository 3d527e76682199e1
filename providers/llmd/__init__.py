"""llm-d: apps/v1 Deployment and v1 Service per ModelDeployment (decode and prefill when split).

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from core.model.plugin import UpstreamKind, no_test_backend
from providers.llmd.flags import flag_catalog as flag_catalog
from providers.llmd.flags import owned_flags as owned_flags
from providers.llmd.overrides import NAME as NAME
from providers.llmd.overrides import OVERRIDE_ROOTS as OVERRIDE_ROOTS
from providers.llmd.overrides import check_overrides as check_overrides
from providers.llmd.pods import model_port as model_port
from providers.llmd.pods import operator_pods as operator_pods
from providers.llmd.pods import picker_config as picker_config
from providers.llmd.pods import pool_selector as pool_selector
from providers.llmd.render import invariants as invariants
from providers.llmd.render import render as render
from providers.llmd.rules import admission_checks as admission_checks
from providers.llmd.rules import served_as as served_as
from providers.llmd.status import workload_status as workload_status

is_test_backend = no_test_backend  # the engine always runs
UPSTREAM_KINDS = (
    UpstreamKind("apps", "v1", "deployments", "Deployment"),
)  # what its status hook reads
