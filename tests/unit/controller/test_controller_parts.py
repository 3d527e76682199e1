"""The status controller's parts that need no API server (controller/queue.py, cache.py,
metrics.py, and reconcile.py through observe.py's Observer): the queue
takes a key once however often it is queued, the cache finds a ModelDeployment's objects by
Runway's label only, the gateway state reads status.parents, and a status is built from the
cache alone. The watches, the writes and the Lease run against a real control plane in
tests/e2e/test_status_controller.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

import kubernetes
from hypothesis import given
from hypothesis import strategies as st

from controller.cache import Cache
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from controller.queue import Queue
from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.status.modeldeployment import GatewayState, gateway_state
from tests.support.builders import model_deployment, shipped_registry

NOW = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC)


@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xyz")), max_size=40))
def test_a_key_queued_many_times_is_taken_once_in_first_queued_order(
    keys: list[tuple[str, str]],
) -> None:
    queue = Queue()
    for key in keys:
        queue.add(key)

    taken: list[tuple[str, str]] = []
    while (got := queue.take(timeout=0)) is not None:
        taken.append(got)

    assert taken == list(dict.fromkeys(keys))


def labelled(kind: str, name: str, md: str | None, namespace: str = "ns") -> dict[str, Any]:
    labels = {"airunway.ai/model-deployment": md} if md else {}
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_the_cache_finds_a_models_objects_by_its_label_in_its_namespace_only() -> None:
    cache = Cache()
    cache.replace(
        "Deployment",
        [
            labelled("Deployment", "m", "m"),
            labelled("Deployment", "m-epp", "m"),
            labelled("Deployment", "other", "n"),
            labelled("Deployment", "m", "m", namespace="elsewhere"),
            labelled("Deployment", "unlabelled", None),
        ],
    )
    cache.replace("HTTPRoute", [labelled("HTTPRoute", "m", "m")])

    assert sorted(cache.owned_by("ns", "m")) == ["Deployment/m", "Deployment/m-epp", "HTTPRoute/m"]
    cache.drop("Deployment", "ns", "m-epp")
    assert sorted(cache.owned_by("ns", "m")) == ["Deployment/m", "HTTPRoute/m"]


def test_metrics_come_from_a_fixed_label_set() -> None:
    metrics = Metrics()
    metrics.reconciled("written", 0.25)
    metrics.reconciled("unchanged", 0.05)
    metrics.restarted("Workspace")
    metrics.leader = True

    text = metrics.render()

    assert 'runway_status_reconciles_total{result="written"} 1' in text
    assert 'runway_status_reconciles_total{result="error"} 0' in text
    assert "runway_status_reconcile_seconds_sum 0.300000" in text
    assert "runway_status_reconcile_seconds_count 2" in text
    assert 'runway_status_watch_restarts_total{kind="Workspace"} 1' in text
    assert "runway_status_leader 1" in text


def parents(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "status": {
            "parents": [
                {
                    "conditions": [
                        {"type": t, "status": s, "reason": f"{t}{s}"} for t, s in conditions
                    ]
                }
            ]
        }
    }


def test_the_gateway_routes_only_when_pool_and_route_are_accepted() -> None:
    md = ModelDeployment(model_deployment("m", "ns", gateway={"enabled": True}))
    accepted = parents(("Accepted", "True"), ("ResolvedRefs", "True"))

    def state(observed: dict[str, Any], **kw: Any) -> GatewayState:
        args: dict[str, Any] = {"pool_is_runways": True, "endpoint": "http://gw", "model_name": "x"}
        return gateway_state(md, observed, **(args | kw))

    assert state({"InferencePool/m": accepted, "HTTPRoute/m": accepted}) == GatewayState(
        True, "GatewayConfigured", "InferencePool and HTTPRoute accepted", "http://gw", "x"
    )
    assert state({"InferencePool/m": accepted}) == GatewayState(
        False, "NotCreated", "HTTPRoute/m does not exist yet", "http://gw", "x"
    )
    assert state({"InferencePool/m": accepted, "HTTPRoute/m": {"status": {}}}).message == (
        "HTTPRoute/m has no parent status yet (no gateway controller has accepted it)"
    )
    refused = parents(("Accepted", "False"), ("ResolvedRefs", "True"))
    assert state({"InferencePool/m": refused, "HTTPRoute/m": accepted}).message == (
        "InferencePool/m is not Accepted (AcceptedFalse)"
    )
    # the operator's own pool (Dynamo) is not Runway's to check
    assert state({"HTTPRoute/m": accepted}, pool_is_runways=False).ready


def test_a_status_is_built_from_the_cache_alone() -> None:
    admission = admit(
        model_deployment("m", "ns", provider="vllm", engine="vllm", gpu=1),
        registry=shipped_registry(),
    )
    observer = Observer(
        kubernetes.client.ApiClient(), ObserveSettings(), Metrics(), lambda: True, clock=lambda: NOW
    )
    deployment = labelled("Deployment", "m", "m")
    deployment |= {
        "spec": {"replicas": 1},
        "status": {
            "readyReplicas": 1,
            "availableReplicas": 1,
            "updatedReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }
    observer.cache.replace("Deployment", [deployment])

    status = observer.status_of(dict(admission.obj))

    assert status is not None
    assert (status["phase"], status["replicas"], status["endpoint"]) == (
        "Running",
        {"desired": 1, "ready": 1, "available": 1},
        {"service": "m", "port": 8000},
    )
    assert {c["lastTransitionTime"] for c in status["conditions"]} == {"2026-12-02T10:00:00Z"}


OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "drop"]),
        st.sampled_from(["Deployment", "HTTPRoute"]),
        st.sampled_from(["ns", "other"]),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from([None, "m", "n"]),
    ),
    max_size=40,
)


@given(OPS)
def test_the_owner_index_agrees_with_a_scan_after_any_puts_drops_and_relabels(
    ops: list[tuple[str, str, str, str, str | None]],
) -> None:
    cache = Cache()
    model: dict[tuple[str, str, str], dict[str, Any]] = {}
    for op, kind, namespace, name, owner in ops:
        if op == "put":
            obj = labelled(kind, name, owner, namespace=namespace)
            cache.put(kind, obj)
            model[(kind, namespace, name)] = obj
        else:
            cache.drop(kind, namespace, name)
            model.pop((kind, namespace, name), None)

    for namespace in ("ns", "other"):
        for md in ("m", "n"):
            expected = {
                f"{k}/{n}": o
                for (k, ns, n), o in sorted(model.items())
                if ns == namespace
                and o["metadata"]["labels"].get("airunway.ai/model-deployment") == md
            }
            assert cache.owned_by(namespace, md) == expected


def test_a_key_queued_while_in_flight_waits_for_done_then_goes_to_the_back() -> None:
    queue = Queue()
    queue.add(("ns", "a"))
    queue.add(("ns", "b"))
    first = queue.take(timeout=0)
    queue.add(("ns", "a"))  # changed again while a worker writes it
    second = queue.take(timeout=0)
    third = queue.take(timeout=0)  # not "a": it is still in flight
    queue.done(("ns", "a"))
    queue.done(("ns", "b"))
    fourth = queue.take(timeout=0)
    queue.done(("ns", "a"))
    fifth = queue.take(timeout=0)

    assert (first, second, third, fourth, fifth) == (
        ("ns", "a"),
        ("ns", "b"),
        None,
        ("ns", "a"),
        None,
    )
