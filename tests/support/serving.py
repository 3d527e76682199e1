"""What the GitOps tests on the live control plane share (tests/e2e/test_flux_live.py and the
live case of tests/e2e/test_argocd.py): holding GPU pods back, standing in for a Gateway API
implementation, and recording what a ModelDeployment and a GitOps engine said over time.

No Gateway API implementation runs on the test clusters (Istio and Envoy Gateway route through
Envoy, which is not built here), so `accept_routes` writes what one writes once it has accepted
an InferencePool and an HTTPRoute: a `status.parents` entry per parent Gateway with Accepted and
ResolvedRefs True. The status controller and the shipped health checks read exactly that."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from kubeio.yamlio import dump
from tests.support.cluster import Cluster
from tests.support.live import NODES, persistent_volume, user_claim

T = TypeVar("T")
GATEWAY_GROUP = "gateway.networking.k8s.io"
CONTROLLER_NAME = "runway-tests.dev/stand-in-gateway"
SERVING_ORDER = ("Pending", "Deploying", "Running")


@contextlib.contextmanager
def gpus_held_back(cluster: Cluster) -> Iterator[None]:
    """Cordon every GPU node while inside (a GPU pod created meanwhile stays Pending: the
    scheduler has no node for it); uncordon on the way out, whatever happened."""
    names = [n.name for n in NODES if n.gpus]
    cluster.kubectl("cordon", *names)
    try:
        yield
    finally:
        cluster.kubectl("uncordon", *names)


def delete_pods(cluster: Cluster, namespace: str, deployments: tuple[str, ...]) -> None:
    """Delete the pods of `deployments` (as a drained node loses them); their ReplicaSets make
    new ones at once."""
    for name in deployments:
        found = json.loads(
            cluster.kubectl("get", f"deployment/{name}", "-n", namespace, "-o", "json").stdout
        )
        labels = found["spec"]["selector"]["matchLabels"]
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        cluster.kubectl("delete", "pods", "-n", namespace, "-l", selector, "--wait=false")


def provide_claim(cluster: Cluster, namespace: str, claim: str) -> str:
    """A PersistentVolume and the user's claim `claim` in `namespace`, as the examples'
    pre-existing model cache needs; the PersistentVolume's name."""
    volume = f"{namespace}-{claim}"
    cluster.apply_manifests(dump(persistent_volume(volume, "100Gi")))
    cluster.apply_manifests(dump(user_claim(claim, namespace)))
    return volume


def _accepted(generation: int) -> list[dict[str, Any]]:
    return [
        {
            "type": kind,
            "status": "True",
            "reason": kind,
            "message": "stands in for a Gateway API implementation",
            "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for kind in ("Accepted", "ResolvedRefs")
    ]


def accept_routes(cluster: Cluster, namespace: str, name: str) -> bool:
    """Once the HTTPRoute `name` and the InferencePool `name` exist, report both accepted by
    the HTTPRoute's parent Gateways (as a gateway controller would); whether both were there."""
    found = {}
    for kind in (
        "httproute.gateway.networking.k8s.io",
        "inferencepool.inference.networking.k8s.io",
    ):
        done = cluster.kubectl("get", f"{kind}/{name}", "-n", namespace, "-o", "json", check=False)
        if done.returncode != 0:
            return False
        found[kind] = json.loads(done.stdout)
    route = found["httproute.gateway.networking.k8s.io"]
    gateways = [
        {
            "group": GATEWAY_GROUP,
            "kind": "Gateway",
            "name": p["name"],
            "namespace": p.get("namespace", namespace),
        }
        for p in route["spec"]["parentRefs"]
    ]
    for kind, obj in found.items():
        parents = [
            {
                "parentRef": ref,
                "controllerName": CONTROLLER_NAME,
                "conditions": _accepted(obj["metadata"]["generation"]),
            }
            for ref in gateways
        ]
        if (obj.get("status") or {}).get("parents") == parents:
            continue
        cluster.kubectl(
            "patch",
            f"{kind}/{name}",
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"parents": parents}}),
        )
    return True


class Recorder(Generic[T]):
    """Reads `read()` every `interval` seconds on a thread of its own while inside, and keeps
    every answer that differs from the one before, in order (`seen`). An error in `read` stops
    the recording and is raised on the way out."""

    def __init__(self, read: Callable[[], T], interval: float = 0.2) -> None:
        self._read = read
        self._interval = interval
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="recorder", daemon=True)
        self.seen: list[T] = []

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                answer = self._read()
            except BaseException as err:
                self._error = err
                return
            if not self.seen or self.seen[-1] != answer:
                self.seen.append(answer)
            self._stop.wait(self._interval)

    def __enter__(self) -> Recorder[T]:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._error is not None and exc[0] is None:
            raise self._error


def phases_in_order(phases: list[str | None]) -> list[str]:
    """The distinct phases a model went through (None, the unreported status, left out); an
    AssertionError unless they run forward through Pending, Deploying and Running."""
    distinct: list[str] = []
    for phase in phases:
        if phase is not None and (not distinct or distinct[-1] != phase):
            distinct.append(phase)
    indices = [SERVING_ORDER.index(p) if p in SERVING_ORDER else -1 for p in distinct]
    assert -1 not in indices and indices == sorted(indices), distinct
    return distinct


def model_phases(cluster: Cluster, namespace: str) -> dict[str, str | None]:
    """{ModelDeployment name: status.phase} in `namespace`."""
    listed = json.loads(
        cluster.kubectl("get", "modeldeployments.airunway.ai", "-n", namespace, "-o", "json").stdout
    )["items"]
    return {
        md["metadata"]["name"]: (md.get("status") or {}).get("phase")
        for md in sorted(listed, key=lambda m: m["metadata"]["name"])
    }
