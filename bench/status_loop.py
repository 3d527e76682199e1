"""The status controller's whole loop through a real kube-apiserver and etcd (`python -m
bench.status_loop`, in `make bench`; needs `make cluster`): 1,000 Direct vLLM ModelDeployments
and their Deployments in one namespace, the controller in this process (tests/support/status.py
settings, as `runway status-controller` runs it). Measured: the time to the first report on all
1,000, and, one change at a time, from a Deployment status write (it turns ready) to the
watch delivering the ModelDeployment's new status (Running): the API server's watch of the
Deployment, the controller's queue, mapping and status write, and the watch of the
ModelDeployment, p50 and p99. No webhook and no Deployment controller run: the bench writes
the Deployment status as the controller-manager would."""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes

from controller.run import start, wait
from core.admission.pipeline import admit
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from tests.support.cluster import install_crds, missing_binaries, start_cluster
from tests.support.status import settings_for
from tests.support.wait import wait_until

NAMESPACE = "bench-status"
GROUP, VERSION, PLURAL = "airunway.ai", "v1alpha1", "modeldeployments"


def model(name: str, namespace: str, registry: ProviderRegistry) -> dict[str, Any]:
    """A Direct vLLM ModelDeployment as admission stores it (bench.crowded's too)."""
    md = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
            "provider": {"name": "vllm"},
            "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}},
        },
    }
    return dict(admit(md, registry=registry).obj)


OWNED = {"app.kubernetes.io/managed-by": "runway"}  # and the model's label: owned()


def owned(name: str) -> dict[str, str]:
    """The labels of the Deployment Runway renders for ModelDeployment `name`."""
    return {"airunway.ai/model-deployment": name, **OWNED}


def deployment(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """A one-replica Deployment with `labels` (bench.crowded's too)."""
    pod = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": pod},
            "template": {
                "metadata": {"labels": pod},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
            },
        },
    }


def ready(generation: int) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": generation,
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
            ],
        }
    }


class Phases:
    """A watch of the ModelDeployments recording when each one is first seen in each phase."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self._objects = kubernetes.client.CustomObjectsApi(api)
        self.seen: dict[tuple[str, str], float] = {}
        self.lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._watch(stop)
            except Exception:  # the API server stops after the bench: the watch ends with it
                if not stop.is_set():
                    raise

    def _watch(self, stop: threading.Event) -> None:
        watcher = kubernetes.watch.Watch()
        for event in watcher.stream(
            self._objects.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NAMESPACE,
            PLURAL,
            timeout_seconds=30,
        ):
            obj = event["object"]
            phase = (obj.get("status") or {}).get("phase")
            if phase:
                with self.lock:
                    self.seen.setdefault((obj["metadata"]["name"], phase), time.perf_counter())
            if stop.is_set():
                return

    def count(self, phase: str) -> int:
        with self.lock:
            return sum(1 for _, p in self.seen if p == phase)

    def at(self, name: str, phase: str) -> float | None:
        with self.lock:
            return self.seen.get((name, phase))


def _seen(phases: Phases, name: str) -> Callable[[], float | None]:
    return lambda: phases.at(name, "Running")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.status_loop")
    parser.add_argument("--models", type=int, default=1_000)
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    missing = missing_binaries()
    if missing:
        raise SystemExit(f"bench.status_loop: {', '.join(missing)} not built; run `make cluster`")
    with tempfile.TemporaryDirectory() as scratch:
        cluster = start_cluster(Path(scratch))
        try:
            _run(cluster, args.models, args.changes)
        finally:
            cluster.stop()


def _run(cluster: Any, models: int, changes: int) -> None:
    install_crds(cluster)
    cluster.kubectl("create", "namespace", NAMESPACE)
    api = cluster.api_client()
    objects = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    names = [f"m{i}" for i in range(models)]
    registry = build_registry()
    for i, name in enumerate(names):
        objects.create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, model(f"m{i}", NAMESPACE, registry)
        )
        apps.create_namespaced_deployment(NAMESPACE, deployment(name, NAMESPACE, owned(name)))  # type: ignore[arg-type]
    stop = threading.Event()
    phases = Phases(api)
    threading.Thread(target=phases.run, args=(stop,), daemon=True).start()
    settings = settings_for(NAMESPACE, "bench")
    started = time.perf_counter()
    running = start(api, settings, stop)
    try:
        wait_until(
            lambda: phases.count("Deploying") == models,
            timeout=600,
            interval=0.05,
            what="every first report",
        )
        first = time.perf_counter() - started
        samples = []
        for name in names[:changes]:
            meta = apps.read_namespaced_deployment(name, NAMESPACE).metadata
            generation = int(meta.generation) if meta is not None and meta.generation else 1
            sent = time.perf_counter()
            apps.patch_namespaced_deployment_status(name, NAMESPACE, ready(generation))
            wait_until(_seen(phases, name), timeout=60, interval=0.001, what=name)
            done = phases.at(name, "Running")
            assert done is not None
            samples.append((done - sent) * 1e3)
    finally:
        stop.set()
        wait(running, settings, stop)
        # The watch threads end with the API server, after this: their last words are noise.
        logging.getLogger("controller").setLevel(logging.CRITICAL)
        api.close()
    samples.sort()
    p50, p99 = statistics.median(samples), samples[max(int(len(samples) * 0.99) - 1, 0)]
    print(
        f"status loop through kube-apiserver, {models:,} ModelDeployments: first report on all "
        f"in {first:.1f} s ({models / first:.0f}/s); a Deployment turning ready to its "
        f"ModelDeployment Running seen by a watch: p50 {p50:.1f} ms, p99 {p99:.1f} ms "
        f"({len(samples)} changes, one at a time)"
    )


if __name__ == "__main__":
    main()
