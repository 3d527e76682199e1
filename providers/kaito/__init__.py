"""KAITO: one kaito.sh Workspace per ModelDeployment.

The plug-in (core/model/plugin.py): what this package's files offer, under the names the core
calls.
"""

from core.model.plugin import UpstreamKind, configured_picker, no_invariants, no_test_backend
from providers.kaito.flags import flag_catalog as flag_catalog
from providers.kaito.flags import owned_flags as owned_flags
from providers.kaito.overrides import NAME as NAME
from providers.kaito.overrides import OVERRIDE_ROOTS as OVERRIDE_ROOTS
from providers.kaito.overrides import check_overrides as check_overrides
from providers.kaito.pods import model_port as model_port
from providers.kaito.pods import operator_pods as operator_pods
from providers.kaito.pods import pool_selector as pool_selector
from providers.kaito.render import render as render
from providers.kaito.rules import admission_checks as admission_checks
from providers.kaito.rules import served_as as served_as
from providers.kaito.status import workload_status as workload_status

is_test_backend = no_test_backend  # the engine always runs
picker_config = configured_picker  # the pool's picker runs the provider config's
invariants = no_invariants  # the core's invariants cover its wiring
UPSTREAM_KINDS = (
    UpstreamKind("kaito.sh", "v1beta1", "workspaces", "Workspace"),
)  # what its status hook reads
