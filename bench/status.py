"""Status-controller timings without an API server (`python -m bench.status`): the time from an
upstream object's change reaching the controller's cache to the new ModelDeployment status being
built (queue, cache lookup, the provider's mapping, the status), p50 and p99 over 1,000
ModelDeployments, and the memory the cache holds for 10,000 watched objects. The API server's
own watch latency and the status write are not in it (the live tier measures the whole loop:
tests/e2e/test_status_controller.py)."""

from __future__ import annotations

import statistics
import time
import tracemalloc
from typing import Any

import kubernetes

from controller.kinds import MODEL_DEPLOYMENTS
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from core.admission.pipeline import admit
from kubeio.registry import build_registry

MODELS = 1_000
WATCHED = 10_000


def _model(i: int) -> dict[str, Any]:
    provider = ("vllm", "llmd")[i % 2]
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": f"m{i}", "namespace": f"ns{i % 20}", "generation": 1},
        "spec": {
            "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
            "provider": {"name": provider},
            "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}},
        },
    }


def _deployment(md: dict[str, Any], ready: int) -> dict[str, Any]:
    meta = md["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "generation": 1,
            "labels": {
                "airunway.ai/model-deployment": meta["name"],
                "app.kubernetes.io/managed-by": "runway",
            },
        },
        "spec": {"replicas": 1},
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [{"type": "Available", "status": "True" if ready else "False"}],
        },
    }


def main() -> None:
    registry = build_registry()
    models = []
    for i in range(MODELS):
        admitted = admit(_model(i), registry=registry)
        models.append({**admitted.obj, "metadata": {**admitted.obj["metadata"], "generation": 1}})
    observer = Observer(kubernetes.client.ApiClient(), ObserveSettings(), Metrics(), lambda: True)
    observer.cache.replace(MODEL_DEPLOYMENTS.kind, models)
    observer.cache.replace("Deployment", [_deployment(m, 0) for m in models])
    samples = []
    for md in models:  # each Deployment turns ready: the event, the queue, the new status
        meta = md["metadata"]
        start = time.perf_counter()
        observer.cache.put("Deployment", _deployment(md, 1))
        observer.queue.add((meta["namespace"], meta["name"]))
        key = observer.queue.take(timeout=0)
        assert key is not None
        obj = observer.cache.get(MODEL_DEPLOYMENTS.kind, *key)
        assert obj is not None
        status = observer.status_of(obj)
        samples.append((time.perf_counter() - start) * 1e3)
        assert status is not None and status["phase"] == "Running"
    samples.sort()
    p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99) - 1]
    print(
        f"status after an upstream change, {MODELS:,} ModelDeployments in the cache: "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms (in-process: cache, queue, mapping, status; "
        "no API server)"
    )
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache_observer = Observer(
        kubernetes.client.ApiClient(), ObserveSettings(), Metrics(), lambda: True
    )
    cache_observer.cache.replace("Deployment", [_deployment(_model(i), 1) for i in range(WATCHED)])
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(
        f"cache memory for {WATCHED:,} watched Deployments: {held / 2**20:.1f} MiB "
        f"({held / WATCHED / 1024:.1f} KiB per object, as decoded JSON)"
    )


if __name__ == "__main__":
    main()
