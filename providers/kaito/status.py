"""KAITO: the Workspace's own status at the pin (api/v1beta1/workspace_types.go:184-193 state
Pending, Ready, NotReady, and the fine-tuning states; condition_types.go ResourceReady,
InferenceReady, WorkspaceSucceeded). A Workspace runs one instance, so desired is 1 and ready
and available are 1 once it serves. KAITO serves a Workspace through the Service of its name on
port 80 (pkg/workspace/manifests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import ServiceEndpoint, UpstreamKind, Watched, Workload
from core.status.workloads import (
    DEPLOYING,
    FAILED,
    PENDING,
    RUNNING,
    condition,
    is_true,
    not_created,
    text,
)

SERVICE_PORT = 80


def operator_service(md: ModelDeployment) -> ServiceEndpoint:
    """The Service KAITO <KAITO_VERSION> creates for every Workspace
    (pkg/workspace/controllers/workspace_controller.go:368 calls
    pkg/workspace/manifests/manifests.go:66-91 GenerateServiceManifest): named after the
    Workspace, port 80 ("http") onto the inference server's 5000 (pkg/utils/consts/consts.go:68
    PortInferenceServer), selecting the Workspace's pod of index 0."""
    return ServiceEndpoint(md.name, SERVICE_PORT)


def workload_status(md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]) -> Workload:
    ref = f"Workspace/{md.name}"
    workspace = observed.get(ref)
    if workspace is None:
        return not_created(ref)
    state = text(dig(workspace, "status", "state"))
    succeeded = condition(workspace, "WorkspaceSucceeded")
    inference = condition(workspace, "InferenceReady")

    def at(phase: str, reason: str, message: str) -> Workload:
        up = 1 if phase == RUNNING else 0
        service = operator_service(md)
        return Workload(phase, reason, message, 1, up, up, service.name, service.port)

    if state == "Failed" or (succeeded is not None and succeeded.get("status") == "False"):
        why = succeeded or inference or {}
        return at(
            FAILED,
            text(why.get("reason")) or "WorkspaceFailed",
            text(why.get("message")) or f"{ref} failed",
        )
    if state == "Ready" or is_true(workspace, "WorkspaceSucceeded"):
        return at(RUNNING, "WorkspaceReady", f"{ref} serves")
    if state == "NotReady" or is_true(workspace, "ResourceReady"):
        detail = text((inference or {}).get("message"))
        return at(
            DEPLOYING, "InferenceNotReady", detail or f"{ref}: nodes ready, inference starting"
        )
    return at(PENDING, "WaitingForNodes", f"{ref} is {state or 'waiting for its nodes'}")


WATCHED = Watched(
    (UpstreamKind("kaito.sh", "v1beta1", "workspaces", "Workspace"),), workload_status
)
