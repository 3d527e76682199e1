"""Upstream status read the same way by several providers: apps/v1 Deployments (llm-d, Direct
vLLM) and the phase order used to combine several objects into one Workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import dig
from core.model.plugin import Workload

PENDING, DEPLOYING, RUNNING, FAILED = "Pending", "Deploying", "Running", "Failed"
# The largest replica count the ModelDeployment status schema accepts (format int32): sums of
# upstream counts (DynamoGraphDeployment services, RayService worker groups) are clamped to it,
# or the API server refuses the whole status write (422).
INT32_MAX = 2**31 - 1
# The phase a set of objects has: the worst of theirs (one failed part fails the model).
_WORST = {FAILED: 0, PENDING: 1, DEPLOYING: 2, RUNNING: 3}


def mapping_at(obj: Any, *keys: str) -> Mapping[str, Any]:
    """The object at `keys`, or {} when it is missing or not an object: upstream status is read
    as the cluster holds it, and a malformed one must map to a phase, not raise."""
    found = dig(obj, *keys)
    return found if isinstance(found, Mapping) else {}


def list_at(obj: Any, *keys: str) -> list[Any]:
    """The list at `keys`, or [] when it is missing or not a list."""
    found = dig(obj, *keys)
    return found if isinstance(found, list) else []


def text(value: Any) -> str:
    """A string field as a string ('' when missing or of another type)."""
    return value if isinstance(value, str) else ""


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition of type `kind`, if the object reports one."""
    for entry in list_at(obj, "status", "conditions"):
        if isinstance(entry, Mapping) and entry.get("type") == kind:
            return entry
    return None


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def replicas(value: int) -> int:
    """A replica count as the status schema accepts it: 0 to INT32_MAX."""
    return min(max(value, 0), INT32_MAX)


def not_created(ref: str) -> Workload:
    return Workload(PENDING, "NotCreated", f"{ref} does not exist yet", created=False)


def combine(parts: Sequence[Workload], *, service: str, port: int) -> Workload:
    """One Workload for several objects: the worst phase (its reason and message), the sums of
    the replica counts, and the given Service."""
    worst = min(parts, key=lambda w: _WORST.get(w.phase, 1))
    return Workload(
        worst.phase,
        worst.reason,
        worst.message,
        replicas(sum(w.desired for w in parts)),
        replicas(sum(w.ready for w in parts)),
        replicas(sum(w.available for w in parts)),
        service,
        port,
        all(w.created for w in parts),
    )


def deployment_workload(deployment: Mapping[str, Any] | None, ref: str) -> Workload:
    """An apps/v1 Deployment as a Workload, by its own status (the rules kubectl rollout status
    uses): Failed once Progressing is False for ProgressDeadlineExceeded; Deploying while the
    controller has not observed the current generation, fewer replicas are updated and available
    than wanted, or old replicas still run; Running when none of that holds and the Deployment is
    Available; Pending when it wants none."""
    if deployment is None:
        return not_created(ref)
    replicas = dig(deployment, "spec", "replicas")
    desired = 1 if replicas is None else count(replicas)  # absent: the API server's default
    status = mapping_at(deployment, "status")
    ready, available = count(status.get("readyReplicas")), count(status.get("availableReplicas"))
    updated = count(status.get("updatedReplicas"))

    def at(phase: str, reason: str, message: str) -> Workload:
        return Workload(phase, reason, message, desired, ready, available)

    progressing = condition(deployment, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        message = text(progressing.get("message")) or f"{ref} exceeded its progress deadline"
        return at(FAILED, "ProgressDeadlineExceeded", message)
    generation = dig(deployment, "metadata", "generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return at(DEPLOYING, "RolloutPending", f"{ref}: the rollout has not started")
    if desired == 0:
        return at(PENDING, "ScaledToZero", f"{ref} wants 0 replicas")
    total = count(status.get("replicas"))
    # kubectl rollout status: every replica updated, no old replica left, every one available
    if (
        updated >= desired
        and total <= updated
        and available >= desired
        and is_true(deployment, "Available")
    ):
        return at(RUNNING, "DeploymentReady", f"{ref}: all {desired} replicas are ready")
    old = max(total - updated, 0)
    message = f"{ref}: {available} of {desired} replicas available, {updated} updated"
    if old:
        message += f", {old} old still running"
    return at(DEPLOYING, "DeploymentInProgress", message)
