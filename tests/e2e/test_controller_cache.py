"""The status controller holds what it owns and nothing else (issue #46, item 3), against a real
kube-apiserver of its own (so that the whole set of cluster-wide keys is this test's): beside a
ModelDeployment, three Deployments Runway rendered, an ExternalModelProvider and a provider
config, the cluster has unlabelled Deployments, Deployments another tool manages, Secrets and
ConfigMaps (some carrying Runway's managed-by label) and Services. With the controller watching
every namespace, its cache holds exactly the owned objects' keys, the ExternalModelProvider as
metadata alone (no spec, no status) and no object's managedFields; and its /metrics counts the
same objects per kind. Its lists are read in pages of 2, so the owned Deployments come in two
pages (a continue token).

Dropping the label selector of Deployments (controller/kinds.py managed_only) makes this fail:
the unlabelled Deployments reach the cache."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from controller.kinds import KINDS
from controller.lease import LeaseSettings
from controller.observe import ObserveSettings
from controller.run import ControllerSettings, start, wait
from core.admission.pipeline import admit
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from kubeio.yamlio import dump
from tests.support.builders import external_model_provider, model_deployment
from tests.support.cluster import Cluster, start_cluster
from tests.support.wait import wait_until

OWNED, OTHER = "owned", "other"
MANAGED = {"app.kubernetes.io/managed-by": "runway"}


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = start_cluster(tmp_path_factory.mktemp("controller-cache"))
    try:
        yield started
    finally:
        started.stop()


def _deployment(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    pod = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": pod},
            "template": {
                "metadata": {"labels": pod},
                "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]},
            },
        },
    }


def _core(kind: str, name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "labels": labels}
    if kind == "Service":
        return {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": meta,
            "spec": {"ports": [{"port": 80}]},
        }
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"k": "dmFsdWU="}}


def _crowd() -> list[dict[str, Any]]:
    """Everything in the cluster that is not the controller's."""
    helm = {"app.kubernetes.io/managed-by": "Helm"}
    unrelated = [
        _deployment("stray", OWNED, {}),
        _deployment("m-twin", OWNED, {"airunway.ai/model-deployment": "m"}),  # no managed-by
        _deployment("web", OTHER, helm),
    ]
    for kind in ("Secret", "ConfigMap", "Service"):
        for namespace in (OWNED, OTHER):
            unrelated.append(_core(kind, f"{kind.lower()}-plain", namespace, {}))
            unrelated.append(_core(kind, f"{kind.lower()}-managed", namespace, MANAGED))
    return unrelated


def _settings() -> ControllerSettings:
    return ControllerSettings(
        lease=LeaseSettings(OWNED, "runway-status", "cache", 4.0, 1.0),
        observe=ObserveSettings(None, "", watch_seconds=30, retry_seconds=0.5, list_page=2),
        probe_port=0,
        health_seconds=0,
    )


def test_the_cache_holds_exactly_what_the_controller_owns(own: Cluster) -> None:
    for namespace in (OWNED, OTHER):
        own.kubectl("create", "namespace", namespace)
    config = bundled_config_objects()[0]
    md = dict(
        admit(
            model_deployment("m", OWNED, provider="vllm", engine="vllm", gpu=1),
            registry=build_registry(),
        ).obj
    )
    owned = [
        md,
        _deployment("m", OWNED, {**MANAGED, "airunway.ai/model-deployment": "m"}),
        _deployment("m-cache", OWNED, {**MANAGED, "airunway.ai/model-deployment": "m"}),
        _deployment("m", OTHER, {**MANAGED, "airunway.ai/model-deployment": "m"}),
        external_model_provider("e", OWNED),
        config,
    ]
    own.apply_manifests("---\n".join(dump(obj) for obj in [*owned, *_crowd()]))
    api = own.api_client()
    stop = threading.Event()
    settings = _settings()
    running = start(api, settings, stop)
    cache = running.observer.cache
    objects = kubernetes.client.CustomObjectsApi(api)
    try:

        def reported() -> bool:
            got: Any = objects.get_namespaced_custom_object(
                "airunway.ai", "v1alpha1", OWNED, "modeldeployments", "m"
            )
            return bool(got.get("status"))

        wait_until(
            lambda: cache.synced(KINDS) and reported(),
            timeout=60,
            what="the controller's lists and its first status",
        )
        url = f"http://127.0.0.1:{running.probe_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            metrics = answer.read().decode()
        held = cache.keys()
        provider = cache.get("ExternalModelProvider", OWNED, "e") or {}
        every = [cache.get(*key) or {} for key in held]
    finally:
        stop.set()
        wait(running, settings, stop)
        api.close()

    assert held == sorted(
        [
            ("Deployment", OTHER, "m"),
            ("Deployment", OWNED, "m"),
            ("Deployment", OWNED, "m-cache"),
            ("ExternalModelProvider", OWNED, "e"),
            ("InferenceProviderConfig", "", config["metadata"]["name"]),
            ("ModelDeployment", OWNED, "m"),
        ]
    )
    assert (sorted(provider), provider.get("metadata", {}).get("generation")) == (
        ["apiVersion", "kind", "metadata"],
        1,
    )
    assert [obj["metadata"].get("managedFields") for obj in every] == [None] * len(held)
    for kind, count in (("Deployment", 3), ("ModelDeployment", 1), ("LeaderWorkerSet", 0)):
        assert f'runway_status_cached_objects{{kind="{kind}"}} {count}\n' in metrics
