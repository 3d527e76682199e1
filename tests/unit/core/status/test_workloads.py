"""Each provider's status mapping (providers/<name>/status.py) over the upstream objects' own
status, as their operators write it at the pins: the whole Workload, for every state. The
operators of DGD and Workspace cannot be built here, so these statuses are written as the
operators write them (their CRDs' status schemas in the schema pack)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.kinds import ModelDeployment
from core.model.plugin import Workload
from providers.modules import plugins
from tests.support.builders import disaggregated, model_deployment

PLUGINS = {p.name: p for p in plugins()}


def md(provider: str, **spec: Any) -> ModelDeployment:
    return ModelDeployment(model_deployment("m", "ns", provider=provider, engine="vllm", **spec))


def deployment(
    *,
    replicas: int = 2,
    ready: int = 2,
    available: int = 2,
    updated: int = 2,
    generation: int = 3,
    observed: int = 3,
    conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "readyReplicas": ready,
            "availableReplicas": available,
            "updatedReplicas": updated,
            "conditions": conditions
            if conditions is not None
            else [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "True"},
            ],
        },
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            None,
            Workload(
                "Pending",
                "NotCreated",
                "Deployment/m does not exist yet",
                0,
                0,
                0,
                "m",
                8000,
                False,
            ),
        ),
        (
            deployment(),
            Workload(
                "Running",
                "DeploymentReady",
                "Deployment/m: all 2 replicas are ready",
                2,
                2,
                2,
                "m",
                8000,
            ),
        ),
        (
            deployment(ready=1, available=1),
            Workload(
                "Deploying",
                "DeploymentInProgress",
                "Deployment/m: 1 of 2 replicas available, 2 updated",
                2,
                1,
                1,
                "m",
                8000,
            ),
        ),
        (
            deployment(observed=2),
            Workload(
                "Deploying",
                "RolloutPending",
                "Deployment/m: the rollout has not started",
                2,
                2,
                2,
                "m",
                8000,
            ),
        ),
        (
            deployment(
                ready=0,
                available=0,
                conditions=[
                    {"type": "Available", "status": "False"},
                    {
                        "type": "Progressing",
                        "status": "False",
                        "reason": "ProgressDeadlineExceeded",
                        "message": 'ReplicaSet "m-5d" has timed out progressing.',
                    },
                ],
            ),
            Workload(
                "Failed",
                "ProgressDeadlineExceeded",
                'ReplicaSet "m-5d" has timed out progressing.',
                2,
                0,
                0,
                "m",
                8000,
            ),
        ),
        (
            deployment(replicas=0, ready=0, available=0, updated=0),
            Workload(
                "Pending", "ScaledToZero", "Deployment/m wants 0 replicas", 0, 0, 0, "m", 8000
            ),
        ),
        (
            deployment(conditions=[{"type": "Available", "status": "False"}]),
            Workload(
                "Deploying",
                "DeploymentInProgress",
                "Deployment/m: 2 of 2 replicas available, 2 updated",
                2,
                2,
                2,
                "m",
                8000,
            ),
        ),
    ],
    ids=[
        "missing",
        "ready",
        "partly-ready",
        "new-generation",
        "deadline",
        "scaled-to-zero",
        "not-available",
    ],
)
def test_direct_vllm_reads_its_deployment(obj: dict[str, Any] | None, expected: Workload) -> None:
    observed = {} if obj is None else {"Deployment/m": obj}
    got = PLUGINS["vllm"].watched.workload_status(
        md("vllm", resources={"gpu": {"count": 1}}), observed
    )
    assert got == expected


def test_llmd_disaggregated_is_the_worst_of_its_roles_with_counts_summed() -> None:
    obj = disaggregated("m")
    obj["spec"]["provider"] = {"name": "llmd"}
    split = ModelDeployment(obj)
    observed = {
        "Deployment/m-decode": deployment(),
        "Deployment/m-prefill": deployment(replicas=1, ready=0, available=0, updated=1),
    }

    assert PLUGINS["llmd"].watched.workload_status(split, observed) == Workload(
        "Deploying",
        "DeploymentInProgress",
        "Deployment/m-prefill: 0 of 1 replicas available, 1 updated",
        3,
        2,
        2,
        "m-decode",
        8000,
    )
    observed["Deployment/m-prefill"] = deployment(replicas=1, ready=1, available=1, updated=1)
    assert PLUGINS["llmd"].watched.workload_status(split, observed).phase == "Running"
    del observed["Deployment/m-prefill"]
    assert PLUGINS["llmd"].watched.workload_status(split, observed) == Workload(
        "Pending",
        "NotCreated",
        "Deployment/m-prefill does not exist yet",
        2,
        2,
        2,
        "m-decode",
        8000,
        False,
    )


def graph(state: str | None, **status: Any) -> dict[str, Any]:
    services = {
        "VllmWorker": {
            "componentKind": "Deployment",
            "componentName": "m-vllmworker",
            "replicas": 2,
            "updatedReplicas": 2,
            "readyReplicas": 1,
            "availableReplicas": 1,
        },
        "Frontend": {
            "componentKind": "Deployment",
            "componentName": "m-frontend",
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
        },
    }
    body: dict[str, Any] = {"services": services, **status}
    if state is not None:
        body["state"] = state
    return {"metadata": {"generation": 1}, "status": body}


@pytest.mark.parametrize(
    ("state", "phase", "reason"),
    [
        ("successful", "Running", "DeploymentReady"),
        ("initializing", "Deploying", "Initializing"),
        ("pending", "Pending", "Pending"),
        ("failed", "Failed", "DeploymentFailed"),
        (None, "Pending", "Unknown"),
    ],
)
def test_dynamo_reads_the_graphs_state(state: str | None, phase: str, reason: str) -> None:
    got = PLUGINS["dynamo"].watched.workload_status(
        md("dynamo", resources={"gpu": {"count": 1}}), {"DynamoGraphDeployment/m": graph(state)}
    )

    shown = state or "without a state yet"
    assert got == Workload(
        phase, reason, f"DynamoGraphDeployment/m is {shown}", 3, 2, 2, "m-frontend", 8000
    )


def test_dynamo_behind_a_gateway_has_no_frontend_service_and_a_stale_generation_deploys() -> None:
    gated = md("dynamo", resources={"gpu": {"count": 1}}, gateway={"enabled": True})
    stale = graph("successful", observedGeneration=1)
    stale["metadata"]["generation"] = 2
    stale["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": "rolling"}]

    assert PLUGINS["dynamo"].watched.workload_status(
        gated, {"DynamoGraphDeployment/m": stale}
    ) == Workload("Deploying", "RolloutPending", "rolling", 3, 2, 2, "", 0)


def workspace(state: str | None, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [
            {"type": t, "status": s, "reason": "R", "message": m} for t, s, m in conditions
        ]
    }
    if state:
        status["state"] = state
    return {"status": status}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (workspace("Ready"), ("Running", "WorkspaceReady", "Workspace/m serves", 1)),
        (
            workspace(
                "NotReady", ("ResourceReady", "True", ""), ("InferenceReady", "False", "pulling")
            ),
            ("Deploying", "InferenceNotReady", "pulling", 0),
        ),
        (workspace("Pending"), ("Pending", "WaitingForNodes", "Workspace/m is Pending", 0)),
        (
            workspace(None),
            ("Pending", "WaitingForNodes", "Workspace/m is waiting for its nodes", 0),
        ),
        (
            workspace(None, ("WorkspaceSucceeded", "False", "no nodes")),
            ("Failed", "R", "no nodes", 0),
        ),
        (
            workspace(None, ("WorkspaceSucceeded", "True", "")),
            ("Running", "WorkspaceReady", "Workspace/m serves", 1),
        ),
    ],
)
def test_kaito_reads_the_workspaces_state_and_conditions(
    obj: dict[str, Any], expected: tuple[str, str, str, int]
) -> None:
    phase, reason, message, up = expected
    got = PLUGINS["kaito"].watched.workload_status(md("kaito"), {"Workspace/m": obj})

    assert got == Workload(phase, reason, message, 1, up, up, "m", 80)


def rayservice(apps: dict[str, str], ready: bool, workers: int = 2) -> dict[str, Any]:
    return {
        "spec": {"rayClusterConfig": {"workerGroupSpecs": [{"replicas": 2}]}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "activeServiceStatus": {
                "applicationStatuses": {
                    name: {"status": status, "message": f"{name} says {status}"}
                    for name, status in apps.items()
                },
                "rayClusterStatus": {
                    "readyWorkerReplicas": workers,
                    "availableWorkerReplicas": workers,
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            rayservice({"llm": "RUNNING"}, True),
            ("Running", "ApplicationsRunning", "RayService/m: every application runs", 2),
        ),
        (
            rayservice({"llm": "DEPLOYING"}, False, 1),
            ("Deploying", "ApplicationsDeploying", "RayService/m: llm DEPLOYING", 1),
        ),
        (
            rayservice({"llm": "DEPLOY_FAILED"}, False, 0),
            ("Failed", "ApplicationFailed", "llm says DEPLOY_FAILED", 0),
        ),
        (
            rayservice({"llm": "UNHEALTHY"}, True),
            ("Failed", "ApplicationFailed", "llm says UNHEALTHY", 2),
        ),
        (
            rayservice({}, False, 0),
            ("Deploying", "ApplicationsDeploying", "RayService/m: no application yet", 0),
        ),
        (
            rayservice({"llm": "RUNNING"}, False),
            ("Deploying", "ApplicationsDeploying", "RayService/m: llm RUNNING", 2),
        ),
    ],
)
def test_kuberay_reads_the_rayservice_and_its_applications(
    obj: dict[str, Any], expected: tuple[str, str, str, int]
) -> None:
    phase, reason, message, up = expected
    got = PLUGINS["kuberay"].watched.workload_status(md("kuberay"), {"RayService/m": obj})

    assert got == Workload(phase, reason, message, 2, up, up, "m-serve-svc", 8000)


@pytest.mark.parametrize(("pods_ready", "replicas_ready"), [(4, 2), (3, 1), (1, 0)])
def test_kuberay_counts_whole_replicas_across_nodes(pods_ready: int, replicas_ready: int) -> None:
    """Two replicas across two nodes are four worker pods; a replica is ready when all its pods
    are (before, the pods were reported as replicas: 4 desired)."""
    obj = rayservice({"llm": "DEPLOYING"}, False, pods_ready)
    obj["spec"]["rayClusterConfig"]["workerGroupSpecs"] = [{"replicas": 4}]
    engine = {"type": "vllm", "args": {"pipeline-parallel-size": "2"}}
    model = ModelDeployment(model_deployment("m", "ns", gpu=8, provider="kuberay", engine=engine))

    got = PLUGINS["kuberay"].watched.workload_status(model, {"RayService/m": obj})

    assert (got.desired, got.ready, got.available) == (2, replicas_ready, replicas_ready)


@pytest.mark.parametrize("provider", sorted(PLUGINS))
def test_every_provider_reports_a_missing_primary_object_as_not_created(provider: str) -> None:
    got = PLUGINS[provider].watched.workload_status(
        md(provider, resources={"gpu": {"count": 1}}), {}
    )

    assert (got.phase, got.reason, got.created) == ("Pending", "NotCreated", False)


def test_a_rollout_whose_new_pod_cannot_start_is_deploying_while_the_old_one_serves() -> None:
    """kubectl rollout status's rule: every replica updated and no old one left."""
    stuck = deployment(replicas=1, ready=1, available=1, updated=1)
    stuck["status"]["replicas"] = 2  # the old pod and the unschedulable new one

    got = PLUGINS["vllm"].watched.workload_status(
        md("vllm", resources={"gpu": {"count": 1}}), {"Deployment/m": stuck}
    )

    assert got == Workload(
        "Deploying",
        "DeploymentInProgress",
        "Deployment/m: 1 of 1 replicas available, 1 updated, 1 old still running",
        1,
        1,
        1,
        "m",
        8000,
    )


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    [
        "state",
        "services",
        "conditions",
        "replicas",
        "readyReplicas",
        "availableReplicas",
        "updatedReplicas",
        "observedGeneration",
        "activeServiceStatus",
        "parents",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    provider=st.sampled_from(sorted(PLUGINS)),
    status=st.dictionaries(FIELDS, JSONISH, max_size=6),
    spec=st.dictionaries(st.sampled_from(["replicas", "rayClusterConfig"]), JSONISH, max_size=2),
)
def test_a_malformed_upstream_status_maps_to_a_phase_and_never_raises(
    provider: str, status: dict[str, Any], spec: dict[str, Any]
) -> None:
    """Whatever shape an upstream object's status has (a list where an object belongs, a
    number for a message, conditions that are strings): the mapping answers a phase."""
    model = md(provider, resources={"gpu": {"count": 1}})
    obj = {"metadata": {"generation": 1}, "spec": spec, "status": status}
    observed = {
        f"{kind}/{name}": obj
        for kind in ("Deployment", "DynamoGraphDeployment", "Workspace", "RayService")
        for name in ("m", "m-decode", "m-prefill")
    }

    got = PLUGINS[provider].watched.workload_status(model, observed)

    assert got.phase in ("Pending", "Deploying", "Running", "Failed")
    assert isinstance(got.message, str) and isinstance(got.reason, str)
    assert min(got.desired, got.ready, got.available) >= 0
