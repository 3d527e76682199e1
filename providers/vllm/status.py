"""Direct vLLM: the Deployment Runway renders, or the LeaderWorkerSet of a model across nodes,
read by its own status (core/status/workloads.py, core/status/leaderworkerset.py); the
Service of the same name serves the model on its http port."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import Watched, Workload
from core.rendering.common import HTTP_PORT
from core.rendering.leaderworkerset import LEADERWORKERSETS, is_multinode
from core.rendering.pods import DEPLOYMENTS
from core.status.leaderworkerset import leaderworkerset_workload
from core.status.workloads import combine, deployment_workload


def workload_status(md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]) -> Workload:
    if is_multinode(md):
        ref = f"{LEADERWORKERSETS.kind}/{md.name}"
        part = leaderworkerset_workload(observed.get(ref), ref)
    else:
        ref = f"Deployment/{md.name}"
        part = deployment_workload(observed.get(ref), ref)
    return combine([part], service=md.name, port=HTTP_PORT)


# LeaderWorkerSets are watched as Deployments are, a kind the core renders for several providers
# (kubeio/upstream.py upstream_kinds), not as a provider's own.
WATCHED = Watched((DEPLOYMENTS,), workload_status)
