"""llm-d: the Deployments Runway renders (one, or decode and prefill), or the LeaderWorkerSet of
an aggregated model across nodes, read by their own status (core/status/workloads.py,
core/status/leaderworkerset.py) and combined (the worst phase; replica counts summed). The
Service named after the model (aggregated) or its decode pods serves it on the http port."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.names import ROLE_SUFFIXES, child_name
from core.model.plugin import Watched, Workload
from core.rendering.common import HTTP_PORT
from core.rendering.leaderworkerset import LEADERWORKERSETS, is_multinode
from core.rendering.pods import DEPLOYMENTS
from core.status.leaderworkerset import leaderworkerset_workload
from core.status.workloads import combine, deployment_workload


def workload_status(md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]) -> Workload:
    if is_multinode(md):
        ref = f"{LEADERWORKERSETS.kind}/{md.name}"
        lws = leaderworkerset_workload(observed.get(ref), ref)
        return combine([lws], service=md.name, port=HTTP_PORT)
    names = [child_name(md.name, r) for r in ROLE_SUFFIXES] if md.is_disaggregated else [md.name]
    parts = [deployment_workload(observed.get(f"Deployment/{n}"), f"Deployment/{n}") for n in names]
    return combine(parts, service=names[0], port=HTTP_PORT)


# LeaderWorkerSets are watched as Deployments are, a kind the core renders for several providers
# (kubeio/upstream.py upstream_kinds), not as a provider's own.
WATCHED = Watched((DEPLOYMENTS,), workload_status)
