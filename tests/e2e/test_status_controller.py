"""The status controller on the live control plane (kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK's fake GPU nodes, tests/support/live.py): a Direct vLLM model rendered
and applied with Runway's own commands rolls out, and the controller reports it Deploying, then
Running with its replicas and endpoint; a rollout that cannot schedule turns it back to
Deploying; of two replicas exactly one writes, and the other takes over within the Lease's
duration once the first stops. KWOK runs no containers: Ready pods here mean scheduled, not that
vLLM serves."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import pytest

from controller.kinds import KINDS
from core.admission.pipeline import admit
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from kubeio.yamlio import dump
from tests.support.builders import model_deployment
from tests.support.cluster import Cluster
from tests.support.live import render_and_apply
from tests.support.rollout import wait_rolled_out
from tests.support.status import LEASE, conditions, controller
from tests.support.wait import wait_until


@pytest.fixture(scope="module")
def applied(live_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A namespace with one Direct vLLM ModelDeployment (1 GPU), rendered and applied."""
    namespace = f"status-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    work = tmp_path_factory.mktemp("status")
    md = model_deployment(
        "qwen",
        namespace,
        model_id="Qwen/Qwen2.5-0.5B-Instruct",
        gpu=1,
        engine="vllm",
        provider="vllm",
    )
    render_and_apply({"md.yaml": md}, work, live_cluster)
    yield namespace
    live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def status_of(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    obj: dict[str, Any] = kubernetes.client.CustomObjectsApi(api).get_namespaced_custom_object(
        "airunway.ai", "v1alpha1", namespace, "modeldeployments", "qwen"
    )  # type: ignore[assignment]  # the client's stubs say object; it returns the decoded JSON
    return obj


def probe(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_status_follows_the_rollout_and_one_replica_writes(
    live_cluster: Cluster, applied: str
) -> None:
    namespace = applied
    api = live_cluster.api_client()
    stop_a, stop_b = threading.Event(), threading.Event()
    first = controller(api, namespace, "a", stop_a)
    try:
        wait_rolled_out(live_cluster, namespace, ["qwen"])

        def running() -> bool:
            obj = status_of(api, namespace)
            return (obj.get("status") or {}).get("phase") == "Running"

        wait_until(running, timeout=60, interval=0.5, what="ModelDeployment Running")
        obj = status_of(api, namespace)
        status = obj["status"]
        assert (status["replicas"], status["endpoint"]) == (
            {"desired": 1, "ready": 1, "available": 1},
            {"service": "qwen", "port": 8000},
        )
        assert status["observedGeneration"] == obj["metadata"]["generation"]
        assert conditions(obj) == {
            "Validated": "True",
            "EngineSelected": "True",
            "ProviderSelected": "True",
            "ResourceCreated": "True",
            "Ready": "True",
        }
        assert first.elector.leading
        probes = f"http://127.0.0.1:{first.probe_port}"
        # /readyz answers 200 once every watched kind's cache has synced, which may come a little
        # after the first Running write (that needs only the kinds of this model): wait for it.
        answers: dict[str, int] = {}

        def probes_answer() -> bool:
            answers.update({path: probe(probes + path) for path in ("/healthz", "/readyz")})
            return answers == {"/healthz": 200, "/readyz": 200}

        with contextlib.suppress(TimeoutError):  # the assertion below says what was missing
            wait_until(probes_answer, timeout=30, interval=0.5, what="/healthz and /readyz 200")
        assert answers == {"/healthz": 200, "/readyz": 200}, (
            [t.name for t in first.threads if not t.is_alive()],
            [k.kind for k in KINDS if not first.observer.cache.synced((k,))],
        )
        with urllib.request.urlopen(probes + "/metrics", timeout=5) as answer:
            metrics = answer.read().decode()
        assert "runway_status_leader 1" in metrics
        assert 'runway_status_reconciles_total{result="written"}' in metrics

        # A rollout that cannot schedule: the new pods wait for a node no one has.
        live_cluster.kubectl(
            "-n",
            namespace,
            "patch",
            "deployment",
            "qwen",
            "--type=merge",
            "-p",
            '{"spec":{"template":{"spec":{"nodeSelector":{"runway-test/no-such":"node"}}}}}',
        )
        wait_until(
            lambda: conditions(status_of(api, namespace)).get("Reconciling") == "True",
            timeout=60,
            interval=0.5,
            what="ModelDeployment Deploying",
        )
        assert status_of(api, namespace)["status"]["phase"] == "Deploying"
        assert conditions(status_of(api, namespace))["Ready"] == "False"

        # A second replica: it follows and writes nothing while the first leads.
        second = controller(api, namespace, "b", stop_b)
        wait_until(
            lambda: second.observer.cache.synced(KINDS), timeout=30, interval=0.2, what="b up"
        )
        live_cluster.kubectl(
            "-n",
            namespace,
            "patch",
            "deployment",
            "qwen",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/spec/template/spec/nodeSelector/runway-test~1no-such"}]',
        )
        wait_until(running, timeout=60, interval=0.5, what="Running again")
        assert not second.elector.leading
        assert second.metrics.reconciles["written"] == 0
        assert first.metrics.reconciles["written"] >= 3

        # The leader stops and releases the Lease: the follower takes over at its next try (the
        # bound is loose for a loaded machine; without the release it would take LEASE).
        stop_a.set()
        wait_until(lambda: second.elector.leading, timeout=3 * LEASE, interval=0.2, what="b leads")
        live_cluster.kubectl("-n", namespace, "scale", "deployment", "qwen", "--replicas=0")

        # (first Deploying while the Deployment controller has not observed the new generation)
        def scaled_down() -> bool:
            status = status_of(api, namespace).get("status") or {}
            return (status.get("phase"), status.get("replicas", {}).get("desired")) == (
                "Pending",
                0,
            )

        wait_until(scaled_down, timeout=60, interval=0.5, what="b writes the scale-down")
        assert second.metrics.reconciles["written"] >= 1
        assert not first.elector.leading
    finally:
        stop_a.set()
        stop_b.set()
        api.close()


WIDGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.runway-test.dev
spec:
  group: runway-test.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


def operator(namespace: str) -> dict[str, Any]:
    """A stand-in for an operator: a Deployment whose pods KWOK marks Ready."""
    labels = {"app": "fake-operator"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "fake-operator", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "op", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def provider_status(api: kubernetes.client.ApiClient) -> dict[str, Any]:
    obj: dict[str, Any] = kubernetes.client.CustomObjectsApi(api).get_cluster_custom_object(
        "airunway.ai", "v1alpha1", "inferenceproviderconfigs", "kaito"
    )  # type: ignore[assignment]  # the client's stubs say object; it returns the decoded JSON
    return obj


def test_provider_health_follows_its_crd_and_operator_pods_and_selection_says_why(
    live_cluster: Cluster,
) -> None:
    namespace = f"health-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    live_cluster.apply_manifests(WIDGETS)
    live_cluster.wait_established(["widgets.runway-test.dev"])
    live_cluster.apply_manifests(dump(operator(namespace)))
    (config,) = [c for c in bundled_config_objects() if c["metadata"]["name"] == "kaito"]
    config["metadata"]["annotations"]["airunway.ai/health"] = json.dumps(
        {
            "crds": [{"name": "widgets.runway-test.dev", "version": "v1"}],
            "operatorPods": [{"namespace": namespace, "selectors": ["app=fake-operator"]}],
        }
    )
    live_cluster.apply_manifests(dump(config))
    api = live_cluster.api_client()
    stop = threading.Event()
    controller(api, namespace, "health", stop, watch=namespace, health=1.0)

    def ready_is(value: bool, reason: str) -> Callable[[], bool]:
        def check() -> bool:
            status = provider_status(api).get("status") or {}
            conditions = {c["type"]: c["reason"] for c in status.get("conditions") or ()}
            return status.get("ready") is value and conditions.get("UpstreamReady") == reason

        return check

    try:
        wait_until(ready_is(True, "UpstreamReady"), timeout=60, interval=0.5, what="kaito ready")
        status = provider_status(api)["status"]
        assert (status["upstreamCRDVersion"], status["version"].split()[0]) == (
            "runway-test.dev/v1",
            "runway",
        )

        live_cluster.kubectl(
            "-n", namespace, "scale", "deployment", "fake-operator", "--replicas=0"
        )
        wait_until(ready_is(False, "OperatorNotReady"), timeout=60, interval=0.5, what="not ready")
        live_cluster.kubectl(
            "-n", namespace, "scale", "deployment", "fake-operator", "--replicas=1"
        )
        wait_until(ready_is(True, "UpstreamReady"), timeout=60, interval=0.5, what="ready again")
        live_cluster.kubectl("delete", "crd", "widgets.runway-test.dev")
        wait_until(ready_is(False, "CRDMissing"), timeout=60, interval=0.5, what="CRD gone")

        # Admission with the configs as the cluster holds them passes KAITO over, saying why.
        registry = build_registry([provider_status(api)])
        cpu = model_deployment("m", namespace, model_id="org/m/m.gguf", engine="llamacpp")
        (error,) = admit(cpu, registry=registry).errors
        assert (error.path, error.detail) == (
            "spec.provider.name",
            "no provider can be selected automatically (kaito: not ready (status.ready is "
            "false: CRD widgets.runway-test.dev is not installed)); set spec.provider.name",
        )
    finally:
        stop.set()
        live_cluster.kubectl("delete", "inferenceproviderconfig", "kaito", check=False)
        live_cluster.kubectl("delete", "crd", "widgets.runway-test.dev", check=False)
        live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")
        api.close()
