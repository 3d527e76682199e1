"""Issue #40, item 7: whatever counts upstream objects report (any int64, in any number of
DynamoGraphDeployment services, RayService worker groups or llm-d Deployments), the
ModelDeployment status Runway builds is one the CRD's status schema accepts, int32 formats
included. Before, two DGD services at 2147483647 replicas summed to 4294967294 and the API
server refused every status write of the model (422)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.kinds import ModelDeployment
from core.model.plugin import Workload
from core.status.modeldeployment import model_deployment_status
from providers.modules import plugins
from tests.support.builders import model_deployment
from tests.support.statusschema import schema_errors

INT32_MAX = 2**31 - 1  # the status schema's replicas: format int32
PLUGINS = {p.name: p for p in plugins()}
INT64 = st.integers(-(2**63), 2**63 - 1)
NOW = "2026-12-07T04:00:00Z"
BIG = st.one_of(INT64, st.sampled_from([INT32_MAX, INT32_MAX + 1, 2**63 - 1, -(2**63), 0]))


def md(provider: str, **spec: Any) -> ModelDeployment:
    obj = model_deployment("m", "ns", provider=provider, engine="vllm", **spec)
    obj["metadata"]["generation"] = 1
    return ModelDeployment(obj)


@given(INT64, INT64, INT64)
def test_any_workload_counts_give_a_status_the_schema_accepts(
    desired: int, ready: int, available: int
) -> None:
    workload = Workload("Running", "Ready", "ok", desired, ready, available, "m", 8000)
    status = model_deployment_status(md("vllm"), workload, gateway=None, now=NOW)

    assert schema_errors(status) == []
    assert status["replicas"] == {
        "desired": min(max(desired, 0), INT32_MAX),
        "ready": min(max(ready, 0), INT32_MAX),
        "available": min(max(available, 0), INT32_MAX),
    }


@settings(max_examples=200)
@given(st.lists(st.tuples(BIG, BIG, BIG), min_size=1, max_size=6))
def test_any_dynamo_services_give_a_status_the_schema_accepts(
    services: list[tuple[int, int, int]],
) -> None:
    graph = {
        "metadata": {"generation": 1},
        "status": {
            "state": "successful",
            "observedGeneration": 1,
            "services": {
                f"S{i}": {"replicas": r, "readyReplicas": ready, "availableReplicas": a}
                for i, (r, ready, a) in enumerate(services)
            },
        },
    }
    model = md("dynamo", resources={"gpu": {"count": 1}})
    workload = PLUGINS["dynamo"].watched.workload_status(model, {"DynamoGraphDeployment/m": graph})
    status = model_deployment_status(model, workload, gateway=None, now=NOW)

    assert schema_errors(status) == []
    assert status["phase"] == "Running"
    desired = sum(r for r, _, _ in services if r > 0)
    assert status["replicas"]["desired"] == min(desired, INT32_MAX)


@settings(max_examples=200)
@given(st.lists(BIG, min_size=1, max_size=6), BIG, BIG)
def test_any_kuberay_worker_groups_give_a_status_the_schema_accepts(
    groups: list[int], ready: int, available: int
) -> None:
    service = {
        "spec": {"rayClusterConfig": {"workerGroupSpecs": [{"replicas": r} for r in groups]}},
        "status": {
            "activeServiceStatus": {
                "rayClusterStatus": {
                    "readyWorkerReplicas": ready,
                    "availableWorkerReplicas": available,
                }
            }
        },
    }
    model = md("kuberay")
    workload = PLUGINS["kuberay"].watched.workload_status(model, {"RayService/m": service})
    status = model_deployment_status(model, workload, gateway=None, now=NOW)

    assert schema_errors(status) == []
    assert status["replicas"]["desired"] == min(sum(r for r in groups if r > 0), INT32_MAX)


def test_the_reported_case_two_services_at_int32_max() -> None:
    graph = {
        "metadata": {"generation": 1},
        "status": {
            "state": "successful",
            "observedGeneration": 1,
            "services": {
                name: {"replicas": INT32_MAX, "readyReplicas": INT32_MAX}
                for name in ("Frontend", "VllmWorker")
            },
        },
    }
    model = md("dynamo", resources={"gpu": {"count": 1}})
    workload = PLUGINS["dynamo"].watched.workload_status(model, {"DynamoGraphDeployment/m": graph})
    status = model_deployment_status(model, workload, gateway=None, now=NOW)

    assert (status["phase"], status["replicas"]) == (
        "Running",
        {"desired": INT32_MAX, "ready": INT32_MAX, "available": 0},
    )
    assert schema_errors(status) == []
