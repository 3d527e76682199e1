"""The KubeRay operator in the loop: every RayService Runway renders is reconciled by the real
operator (built from ray-operator at KUBERAY_VERSION) into a RayCluster whose head and worker
pods exist with the expected image, GPUs and ports, and the operator never refuses the spec.

There is no kubelet, scheduler or controller-manager here: pods stay Pending, so nothing about
Ray itself starting (the serve config reaching the dashboard) is exercised by this tier; the
serve config is checked with Ray's own classes in tests/unit/providers/test_ray_serve_schema.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from core.selection.configs import ProviderRegistry
from tests.support.cluster import Cluster
from tests.support.e2e import unavailable
from tests.support.kuberay import (
    PINS,
    Operator,
    Pod,
    expected_pods,
    get_json,
    install_watched_crds,
    rayservice,
    start_operator,
    unavailable_reason,
)
from tests.support.paths import EXAMPLES
from tests.support.rayservices import kuberay_cases
from tests.support.wait import wait_until

RECONCILE_TIMEOUT = 180
# Reasons of the events and conditions with which KubeRay refuses a spec (utils/constant.go).
REFUSALS = {"InvalidRayServiceSpec", "InvalidRayClusterSpec", "InvalidRayJobSpec"}


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    reason = unavailable_reason()
    if reason is not None:
        if shutil.which("go") is not None:  # it can be built here: never skip
            pytest.fail(f"KubeRay operator tier: {reason}", pytrace=False)
        unavailable(f"KubeRay operator tier: {reason}")
    install_watched_crds(cluster, PINS)
    started = start_operator(cluster, tmp_path_factory.mktemp("kuberay-operator"))
    try:
        yield started
    finally:
        assert started.stop() in (0, -15), started.log_tail()


def ray_pods(cluster: Cluster, namespace: str, expected: int) -> list[dict[str, Any]]:
    """The namespace's pods once there are `expected` of them, else []."""
    pods: list[dict[str, Any]] = get_json(cluster, "pods", "-n", namespace)["items"]
    return pods if len(pods) == expected else []


def summary(pod: dict[str, Any]) -> Pod:
    """(node type, group, image, GPU limits and requests) of a Ray pod."""
    (container,) = pod["spec"]["containers"]
    resources = container.get("resources", {})
    gpus = sorted(
        (f"{kind}:{name}", value)
        for kind in ("limits", "requests")
        for name, value in resources.get(kind, {}).items()
        if name.endswith("/gpu")
    )
    labels = pod["metadata"]["labels"]
    return labels["ray.io/node-type"], labels["ray.io/group"], container["image"], tuple(gpus)


def ports(pod: dict[str, Any]) -> list[tuple[str, int]]:
    (container,) = pod["spec"]["containers"]
    return sorted((p.get("name", ""), p["containerPort"]) for p in container.get("ports", ()))


CASES = kuberay_cases(EXAMPLES)


@pytest.mark.parametrize(("case", "doc"), CASES, ids=[c for c, _ in CASES])
def test_operator_reconciles_every_rendered_rayservice_into_pods(
    cluster: Cluster,
    operator: Operator,
    namespace: str,
    shipped: ProviderRegistry,
    case: str,
    doc: dict[str, Any],
) -> None:
    service = rayservice(doc, namespace, shipped)
    # No controller-manager creates the namespace's default ServiceAccount, and the API server's
    # ServiceAccount admission refuses pods without it.
    cluster.kubectl("create", "serviceaccount", "default", "-n", namespace)

    done = cluster.strict_apply(service)
    assert (done.returncode, done.stderr) == (0, "")
    expected = expected_pods(doc)

    def reconciled() -> list[dict[str, Any]]:
        operator.running()  # raises with the operator's log if it died
        return ray_pods(cluster, namespace, len(expected))

    pods = wait_until(
        reconciled,
        timeout=RECONCILE_TIMEOUT,
        what=f"{len(expected)} Ray pods in {namespace}",
    )

    (raycluster,) = get_json(cluster, "rayclusters", "-n", namespace)["items"]
    owners = [(o["kind"], o["name"]) for o in raycluster["metadata"]["ownerReferences"]]
    assert owners == [("RayService", service["metadata"]["name"])]
    assert sorted(summary(p) for p in pods) == expected
    assert {p["metadata"]["labels"]["ray.io/cluster"] for p in pods} == {
        raycluster["metadata"]["name"]
    }
    # The rendered head ports, plus the metrics port KubeRay adds to every Ray container.
    assert sorted((summary(p)[0], ports(p)) for p in pods) == sorted(
        [("head", [("dashboard", 8265), ("gcs", 6379), ("metrics", 8080), ("serve", 8000)])]
        + [("worker", [("metrics", 8080)])] * (len(expected) - 1)
    )
    events = get_json(cluster, "events", "-n", namespace)["items"]
    assert sorted({e["reason"] for e in events} & REFUSALS) == []
    stored = get_json(cluster, "rayservice", service["metadata"]["name"], "-n", namespace)
    conditions = stored.get("status", {}).get("conditions", [])
    assert sorted({c.get("reason", "") for c in conditions} & REFUSALS) == []
