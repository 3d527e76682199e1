"""NVIDIA Dynamo: one nvidia.com DynamoGraphDeployment per ModelDeployment.

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from core.model.plugin import UpstreamKind, configured_picker
from providers.dynamo.flags import flag_catalog as flag_catalog
from providers.dynamo.flags import owned_flags as owned_flags
from providers.dynamo.overrides import NAME as NAME
from providers.dynamo.overrides import OVERRIDE_ROOTS as OVERRIDE_ROOTS
from providers.dynamo.overrides import check_overrides as check_overrides
from providers.dynamo.pods import model_port as model_port
from providers.dynamo.pods import operator_pods as operator_pods
from providers.dynamo.pods import pool_selector as pool_selector
from providers.dynamo.render import invariants as invariants
from providers.dynamo.render import is_test_backend as is_test_backend
from providers.dynamo.render import render as render
from providers.dynamo.rules import admission_checks as admission_checks
from providers.dynamo.rules import served_as as served_as
from providers.dynamo.status import workload_status as workload_status

picker_config = configured_picker  # the operator runs its own picker (the DGD's Epp service)
UPSTREAM_KINDS = (
    UpstreamKind("nvidia.com", "v1alpha1", "dynamographdeployments", "DynamoGraphDeployment"),
)  # what its status hook reads
