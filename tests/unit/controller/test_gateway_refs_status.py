"""The status of a model with a pool of its own (spec.gateway.poolRef): Runway renders no
InferencePool, so the gateway is ready once the route is accepted, not never."""

from __future__ import annotations

import datetime as dt
from typing import Any

import kubernetes

from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from core.admission.pipeline import admit
from tests.support.builders import model_deployment, shipped_registry

NOW = "2026-12-02T10:00:00Z"
ACCEPTED = {
    "status": {
        "parents": [
            {
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted"},
                    {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs"},
                ]
            }
        ]
    }
}


def observed(kind: str, name: str, **body: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "labels": {"airunway.ai/model-deployment": "m"}}
    return {"kind": kind, "metadata": meta, **body}


def test_a_model_with_its_own_pool_runs_once_its_route_is_accepted() -> None:
    admission = admit(
        model_deployment(
            "m", "ns", provider="vllm", engine="vllm", gpu=1,
            gateway={"enabled": True, "poolRef": {"name": "team-pool"}},
        ),
        registry=shipped_registry(),
    )  # fmt: skip
    observer = Observer(
        kubernetes.client.ApiClient(),
        ObserveSettings(),
        Metrics(),
        lambda: True,
        clock=lambda: dt.datetime(2026, 12, 2, 10, tzinfo=dt.UTC),
    )
    ready = {"readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
    deployment = observed(
        "Deployment", "m", spec={"replicas": 1},
        status={**ready, "conditions": [{"type": "Available", "status": "True"}]},
    )  # fmt: skip
    observer.cache.replace("Deployment", [deployment])
    observer.cache.replace("HTTPRoute", [observed("HTTPRoute", "m", **ACCEPTED)])

    status = observer.status_of(dict(admission.obj))

    assert status is not None
    gateway_ready = [c for c in status["conditions"] if c["type"] == "GatewayReady"]
    assert (status["phase"], gateway_ready) == (
        "Running",
        [
            {
                "type": "GatewayReady",
                "status": "True",
                "reason": "GatewayConfigured",
                "message": "InferencePool and HTTPRoute accepted",
                "lastTransitionTime": NOW,
            }
        ],
    )
