"""A ModelDeployment's whole status from its Workload (core/status/modeldeployment.py): every
field for a serving model, the kstatus conditions per phase, and transition times that move
only when a condition's status does."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.plugin import Workload
from core.status.modeldeployment import GatewayState, model_deployment_status
from tests.support.builders import model_deployment, shipped_registry
from tests.support.stored import stored

SHIPPED = shipped_registry()
T0, T1 = "2026-12-02T10:00:00Z", "2026-12-02T10:05:00Z"
RUNNING = Workload(
    "Running", "DeploymentReady", "Deployment/m: all 2 replicas are ready", 2, 2, 2, "m", 8000
)


def conditions(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in status["conditions"]]


def test_a_serving_model_gets_every_field() -> None:
    status = model_deployment_status(ModelDeployment(stored()), RUNNING, gateway=None, now=T0)

    def cond(kind: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": T0,
            "observedGeneration": 4,
        }

    assert status == {
        "phase": "Running",
        "message": "Deployment/m: all 2 replicas are ready",
        "provider": {"name": "vllm", "selectedReason": "set in spec.provider.name"},
        "engine": {"type": "vllm", "selectedReason": "set in spec.engine.type"},
        "replicas": {"desired": 2, "ready": 2, "available": 2},
        "endpoint": {"service": "m", "port": 8000},
        "conditions": [
            cond("Validated", "ValidationPassed", "admitted by the Runway webhook"),
            cond("EngineSelected", "ExplicitSelection", "set in spec.engine.type"),
            cond("ProviderSelected", "ExplicitSelection", "set in spec.provider.name"),
            cond("ResourceCreated", "ResourceCreated", "the upstream objects exist"),
            cond("Ready", "Serving", "Deployment/m: all 2 replicas are ready"),
        ],
        "observedGeneration": 4,
    }


def test_auto_selection_reasons_come_from_the_stamped_annotations() -> None:
    obj = model_deployment("m", "ns", gpu=1)
    admission = admit(obj, registry=SHIPPED)
    md = ModelDeployment(admission.obj)

    status = model_deployment_status(md, RUNNING, gateway=None, now=T0)

    assert status["provider"] == {
        "name": md.provider_name,
        "selectedReason": md.annotations["airunway.ai/provider-selected-reason"],
    }
    assert conditions(status)[1:3] == [
        ("EngineSelected", "True", "AutoSelected"),
        ("ProviderSelected", "True", "AutoSelected"),
    ]


def test_kstatus_conditions_follow_the_phase() -> None:
    md = ModelDeployment(stored())
    deploying = Workload("Deploying", "DeploymentInProgress", "1 of 2", 2, 1, 1, "m", 8000)
    failed = Workload("Failed", "ProgressDeadlineExceeded", "timed out", 2, 0, 0, "m", 8000)
    missing = Workload("Pending", "NotCreated", "Deployment/m does not exist yet", created=False)

    assert conditions(model_deployment_status(md, deploying, gateway=None, now=T0))[3:] == [
        ("ResourceCreated", "True", "ResourceCreated"),
        ("Ready", "False", "DeploymentInProgress"),
        ("Reconciling", "True", "DeploymentInProgress"),
    ]
    assert conditions(model_deployment_status(md, failed, gateway=None, now=T0))[3:] == [
        ("ResourceCreated", "True", "ResourceCreated"),
        ("Ready", "False", "ProgressDeadlineExceeded"),
        ("Stalled", "True", "ProgressDeadlineExceeded"),
    ]
    pending = model_deployment_status(md, missing, gateway=None, now=T0)
    assert conditions(pending)[3:] == [
        ("ResourceCreated", "False", "NotCreated"),
        ("Ready", "False", "NotCreated"),
        ("Reconciling", "True", "NotCreated"),
    ]
    assert "endpoint" not in pending


def test_a_running_model_whose_gateway_does_not_route_is_not_ready() -> None:
    md = ModelDeployment(stored(gateway={"enabled": True}))
    down = GatewayState(
        False, "RouteNotAccepted", "HTTPRoute/m is not accepted", "http://gw/v1", "org/model"
    )
    up = GatewayState(
        True,
        "GatewayConfigured",
        "InferencePool and HTTPRoute accepted",
        "http://gw/v1",
        "org/model",
    )

    waiting = model_deployment_status(md, RUNNING, gateway=down, now=T0)
    serving = model_deployment_status(md, RUNNING, gateway=up, now=T0)

    assert waiting["message"] == (
        "Deployment/m: all 2 replicas are ready; the gateway does not route yet: "
        "HTTPRoute/m is not accepted"
    )
    assert conditions(waiting)[4:] == [
        ("Ready", "False", "DeploymentReady"),
        ("GatewayReady", "False", "RouteNotAccepted"),
        ("Reconciling", "True", "DeploymentReady"),
    ]
    assert conditions(serving)[4:] == [
        ("Ready", "True", "Serving"),
        ("GatewayReady", "True", "GatewayConfigured"),
    ]
    assert serving["gateway"] == {"endpoint": "http://gw/v1", "modelName": "org/model"}


def test_a_model_being_deleted_is_terminating() -> None:
    obj = stored()
    obj["metadata"]["deletionTimestamp"] = T0

    assert model_deployment_status(ModelDeployment(obj), RUNNING, gateway=None, now=T0)[
        "phase"
    ] == ("Terminating")


PHASES = st.sampled_from(
    [
        RUNNING,
        Workload("Deploying", "DeploymentInProgress", "1 of 2", 2, 1, 1, "m", 8000),
        Workload("Failed", "ProgressDeadlineExceeded", "timed out", 2, 0, 0, "m", 8000),
        Workload("Pending", "NotCreated", "missing", created=False),
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(PHASES, min_size=1, max_size=8))
def test_a_condition_keeps_its_transition_time_until_its_status_changes(
    history: list[Workload],
) -> None:
    obj = stored()
    before: dict[str, tuple[str, str]] = {}
    for step, workload in enumerate(history):
        now = f"2026-12-02T10:{step:02d}:00Z"
        status = model_deployment_status(ModelDeployment(obj), workload, gateway=None, now=now)
        for c in status["conditions"]:
            old = before.get(c["type"])
            if old is not None and old[0] == c["status"]:
                assert c["lastTransitionTime"] == old[1]
            else:
                assert c["lastTransitionTime"] == now
        before = {c["type"]: (c["status"], c["lastTransitionTime"]) for c in status["conditions"]}
        obj = {**obj, "status": status}
