"""A LeaderWorkerSet (core/rendering/leaderworkerset.py: a multi-node vLLM replica per group) as a
Workload, by its own status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import dig
from core.model.plugin import Workload
from core.status.workloads import (
    DEPLOYING,
    PENDING,
    RUNNING,
    count,
    is_true,
    mapping_at,
    not_created,
)


def leaderworkerset_workload(lws: Mapping[str, Any] | None, ref: str) -> Workload:
    """A LeaderWorkerSet as a Workload, by its own status (api/leaderworkerset/v1
    LeaderWorkerSetStatus at the pin: a replica is a group, ready when its leader and every
    worker are): Deploying until the controller has observed the current generation and every
    group is updated and ready with Available true; Pending when it wants none."""
    if lws is None:
        return not_created(ref)
    replicas = dig(lws, "spec", "replicas")
    desired = 1 if replicas is None else count(replicas)  # absent: the CRD's default
    status = mapping_at(lws, "status")
    ready, updated = count(status.get("readyReplicas")), count(status.get("updatedReplicas"))

    def at(phase: str, reason: str, message: str) -> Workload:
        return Workload(phase, reason, message, desired, ready, ready)

    generation = dig(lws, "metadata", "generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return at(DEPLOYING, "RolloutPending", f"{ref}: the rollout has not started")
    if desired == 0:
        return at(PENDING, "ScaledToZero", f"{ref} wants 0 replicas")
    if updated >= desired and ready >= desired and is_true(lws, "Available"):
        return at(RUNNING, "LeaderWorkerSetReady", f"{ref}: all {desired} groups are ready")
    message = f"{ref}: {ready} of {desired} groups ready, {updated} updated"
    return at(DEPLOYING, "LeaderWorkerSetInProgress", message)
