"""KubeRay: the RayService's own status at KubeRay <KUBERAY_VERSION> (condition Ready;
status.activeServiceStatus.applicationStatuses.<app>.status: RUNNING, DEPLOYING, DEPLOY_FAILED,
UNHEALTHY, ...; rayClusterStatus ready and desired worker replicas, which are pods: a model
replica across pipeline-parallel-size nodes is that many of them). The operator serves the
model through the Service <name>-serve-svc on Ray Serve's port 8000."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.plugin import ServiceEndpoint, UpstreamKind, Watched, Workload
from core.status.workloads import (
    DEPLOYING,
    FAILED,
    RUNNING,
    count,
    is_true,
    list_at,
    mapping_at,
    not_created,
    text,
)

SERVE_PORT = 8000
_FAILED_APPS = ("DEPLOY_FAILED", "UNHEALTHY")


def operator_service(md: ModelDeployment) -> ServiceEndpoint:
    """The Ray Serve Service KubeRay <KUBERAY_VERSION> creates for a RayService: named
    `<name>-serve-svc` (ray-operator/controllers/ray/utils/util.go:292-294
    GenerateServeServiceName, called from common/service.go:205), on Ray Serve's port 8000
    (utils/constant.go:71 DefaultServingPort, port name "serve": constant.go:77)."""
    return ServiceEndpoint(f"{md.name}-serve-svc", SERVE_PORT)


def workload_status(md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]) -> Workload:
    ref = f"RayService/{md.name}"
    service = observed.get(ref)
    if service is None:
        return not_created(ref)
    active = mapping_at(service, "status", "activeServiceStatus")
    apps = {
        str(k): v
        for k, v in mapping_at(active, "applicationStatuses").items()
        if isinstance(v, Mapping)
    }
    cluster = mapping_at(active, "rayClusterStatus")
    groups = list_at(service, "spec", "rayClusterConfig", "workerGroupSpecs")
    # A replica spans pipeline-parallel-size worker pods (render.py): replicas are counted whole.
    nodes = md.pipeline_parallel
    desired = sum(count(g.get("replicas")) for g in groups if isinstance(g, Mapping)) // nodes
    ready = min(count(cluster.get("readyWorkerReplicas")) // nodes, desired)
    available = min(count(cluster.get("availableWorkerReplicas")) // nodes, desired)
    serve = operator_service(md)
    endpoint = (serve.name, serve.port)
    failed = sorted(n for n, a in apps.items() if a.get("status") in _FAILED_APPS)
    if failed:
        name = failed[0]
        message = (
            text(apps[name].get("message"))
            or f"application {name} is {text(apps[name].get('status'))}"
        )
        return Workload(FAILED, "ApplicationFailed", message, desired, ready, available, *endpoint)
    running = bool(apps) and all(a.get("status") == "RUNNING" for a in apps.values())
    if running and is_true(service, "Ready"):
        return Workload(
            RUNNING,
            "ApplicationsRunning",
            f"{ref}: every application runs",
            desired,
            ready,
            available,
            *endpoint,
        )
    states = (
        ", ".join(f"{n} {text(a.get('status'))}" for n, a in sorted(apps.items()))
        or "no application yet"
    )
    return Workload(
        DEPLOYING, "ApplicationsDeploying", f"{ref}: {states}", desired, ready, available, *endpoint
    )


WATCHED = Watched((UpstreamKind("ray.io", "v1", "rayservices", "RayService"),), workload_status)
