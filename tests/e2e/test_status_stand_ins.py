"""The status controller on DGD and Workspace, whose operators cannot run here: the Dynamo and
KAITO operators are not served by the Go module proxy (github.com/ai-dynamo/dynamo/deploy/
operator and github.com/kaito-project/kaito answer 403, tests/e2e/test_live.py), so the test
writes each upstream object's status through the status subresource as the operator does at
the pin (the states and conditions providers/dynamo/status.py and providers/kaito/status.py
cite), and reads what Runway's status controller (in this process) makes of it. The
ModelDeployments and their upstream objects are rendered and applied with Runway's commands
onto the test API server, the upstream CRDs being the schema pack's."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from kubeio.yamlio import dump
from tests.support.cluster import Cluster
from tests.support.paths import EXAMPLES
from tests.support.status import controller
from tests.support.wait import wait_until

WORKSPACE = "workspace.kaito.sh/phi-kaito"
GRAPH = "dynamographdeployment.nvidia.com/qwen-mocker"


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


@pytest.fixture(scope="module")
def applied(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    namespace = f"stand-ins-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", namespace)
    work = tmp_path_factory.mktemp("stand-ins")
    (work / "sources").mkdir()
    for name in ("kaito-overrides.yaml", "dynamo-mocker.yaml"):
        doc = yaml.safe_load((EXAMPLES / name).read_text())
        doc["metadata"]["namespace"] = namespace
        (work / "sources" / name).write_text(dump(doc))
    assert main(["render", str(work / "sources"), "--repo", str(work / "repo")]) == 0
    rendered = Path(work / "repo" / "rendered")
    assert main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)]) == 0
    yield namespace
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def write_status(cluster: Cluster, what: str, namespace: str, status: dict[str, Any]) -> None:
    cluster.kubectl(
        "patch",
        what,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def model(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        cluster.kubectl(
            "get", f"modeldeployment.airunway.ai/{name}", "-n", namespace, "-o", "json"
        ).stdout
    )
    return found


def reported(cluster: Cluster, namespace: str, name: str, phase: str) -> dict[str, Any]:
    def at_phase() -> dict[str, Any] | None:
        md = model(cluster, namespace, name)
        return md if (md.get("status") or {}).get("phase") == phase else None

    found = wait_until(at_phase, timeout=60, interval=0.3, what=f"{name} {phase}")
    assert found is not None
    return found


def summary(md: dict[str, Any]) -> tuple[str, str, dict[str, int], dict[str, str]]:
    status = md["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    return status["phase"], status["message"], status["replicas"], conditions


def walk(
    cluster: Cluster,
    namespace: str,
    what: str,
    steps: list[tuple[dict[str, Any], str]],
) -> list[dict[str, Any]]:
    """With the status controller running for `namespace`: the ModelDeployment `what` names once
    it is Pending (its upstream object without a status), then after each (status written on
    the upstream object, phase the model must reach) of `steps`."""
    name = what.rpartition("/")[2]
    stop = threading.Event()
    api = cluster.api_client()
    controller(api, namespace, name, stop)
    try:
        seen = [reported(cluster, namespace, name, "Pending")]
        for status, phase in steps:
            write_status(cluster, what, namespace, status)
            seen.append(reported(cluster, namespace, name, phase))
    finally:
        stop.set()
        api.close()
    return seen


def test_workspace_status_as_kaito_writes_it_drives_the_model_deployment(
    cluster: Cluster, applied: str
) -> None:
    resources = condition("ResourceReady", "True", "ResourcesReady", "nodes ready")
    steps = [
        (
            {
                "state": "NotReady",
                "conditions": [
                    resources,
                    condition("InferenceReady", "False", "Pending", "inference pod starting"),
                ],
            },
            "Deploying",
        ),
        (
            {
                "state": "Ready",
                "conditions": [
                    resources,
                    condition("InferenceReady", "True", "InferenceReady", "inference ready"),
                    condition("WorkspaceSucceeded", "True", "Succeeded", "workspace ready"),
                ],
            },
            "Running",
        ),
        (
            {
                "state": "Failed",
                "conditions": [
                    resources,
                    condition("InferenceReady", "False", "Crashed", "inference pod crashed"),
                    condition("WorkspaceSucceeded", "False", "InferenceFailed", "pod crashed"),
                ],
            },
            "Failed",
        ),
    ]
    seen = walk(cluster, applied, WORKSPACE, steps)

    ready_false = {"Ready": "False", "ResourceCreated": "True", "Reconciling": "True"}
    assert [
        (p, m, r, {k: c[k] for k in c if k in ready_false}) for p, m, r, c in map(summary, seen)
    ] == [
        (
            "Pending",
            "Workspace/phi-kaito is waiting for its nodes",
            {"desired": 1, "ready": 0, "available": 0},
            ready_false,
        ),
        (
            "Deploying",
            "inference pod starting",
            {"desired": 1, "ready": 0, "available": 0},
            ready_false,
        ),
        (
            "Running",
            "Workspace/phi-kaito serves",
            {"desired": 1, "ready": 1, "available": 1},
            {"Ready": "True", "ResourceCreated": "True"},
        ),
        (
            "Failed",
            "pod crashed",
            {"desired": 1, "ready": 0, "available": 0},
            {"Ready": "False", "ResourceCreated": "True"},
        ),
    ]
    assert summary(seen[-1])[3]["Stalled"] == "True"
    assert seen[2]["status"]["endpoint"] == {"service": "phi-kaito", "port": 80}


def test_dynamo_graph_status_as_the_operator_writes_it_drives_the_model_deployment(
    cluster: Cluster, applied: str
) -> None:
    # As the operator reports a component run as a Deployment (status.services.<name>).
    def component(name: str, ready: int) -> dict[str, Any]:
        return {
            "componentKind": "Deployment",
            "componentName": f"qwen-mocker-{name.lower()}",
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": ready,
            "availableReplicas": ready,
        }

    frontend = component("Frontend", 1)
    steps: list[tuple[dict[str, Any], str]] = [
        (
            {
                "state": "initializing",
                "services": {"Frontend": frontend, "VllmWorker": component("VllmWorker", 0)},
            },
            "Deploying",
        ),
        (
            {
                "state": "successful",
                "observedGeneration": 1,
                "services": {"Frontend": frontend, "VllmWorker": component("VllmWorker", 1)},
                "conditions": [condition("Ready", "True", "AllReady", "all services ready")],
            },
            "Running",
        ),
        (
            {
                "state": "failed",
                "conditions": [condition("Ready", "False", "Failed", "VllmWorker crashed")],
            },
            "Failed",
        ),
    ]
    seen = walk(cluster, applied, GRAPH, steps)

    assert [(p, m, r) for p, m, r, _ in map(summary, seen)] == [
        (
            "Pending",
            "DynamoGraphDeployment/qwen-mocker is without a state yet",
            {"desired": 0, "ready": 0, "available": 0},
        ),
        (
            "Deploying",
            "DynamoGraphDeployment/qwen-mocker is initializing",
            {"desired": 2, "ready": 1, "available": 1},
        ),
        ("Running", "all services ready", {"desired": 2, "ready": 2, "available": 2}),
        ("Failed", "VllmWorker crashed", {"desired": 2, "ready": 2, "available": 2}),
    ]
    assert summary(seen[2])[3]["Ready"] == "True"
    assert summary(seen[3])[3]["Stalled"] == "True"
    assert seen[2]["status"]["endpoint"] == {"service": "qwen-mocker-frontend", "port": 8000}
