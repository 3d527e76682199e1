"""How a refusal by an older upstream schema reads in a ModelDeployment's status (the seed's
rejection path): phase Failed, ResourceCreated=False and Ready=False with reason
IncompatibleUpstream. For a custom kind the message names the field the API server named; for a
built-in kind (apps/v1, v1) the API server names one arbitrary unknown field per call, so the
message is a stable summary (the field goes to the log), or every reconcile would rewrite it."""

from __future__ import annotations

from core.model.plugin import Workload
from core.status.workloads import FAILED

INCOMPATIBLE_UPSTREAM = "IncompatibleUpstream"


def is_builtin(api_version: str) -> bool:
    """Whether `api_version` is one of Kubernetes' own groups (no dot: v1, apps/v1, batch/v1)."""
    return "." not in api_version.rpartition("/")[0]


def incompatible_message(ref: str, field: str | None, *, builtin: bool) -> str:
    """The status message for `ref` (Kind/name) refused for `field`."""
    where = "a field" if builtin or not field else f"field {field}"
    return (
        f"{ref}: the installed upstream does not declare {where}; "
        "upgrade the upstream or Runway's pin"
    )


def incompatible_workload(ref: str, field: str | None, *, builtin: bool) -> Workload:
    """The Workload of a model whose upstream object `ref` the API server refuses."""
    message = incompatible_message(ref, field, builtin=builtin)
    return Workload(FAILED, INCOMPATIBLE_UPSTREAM, message, created=False)
