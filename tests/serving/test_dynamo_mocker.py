"""The Dynamo mocker graph, from the commit to token counts: examples/dynamo-mocker.yaml rendered by
`runway render` into a DynamoGraphDeployment, its VllmWorker (`python3 -m dynamo.mocker` with the
rendered args) and its Frontend (no command rendered: the operator's default `python3 -m
dynamo.frontend`) run as the pods the Dynamo operator 1.1.1 would build, registered in the real
LiteLLM proxy by `runway gateway-sync` at the frontend's Service, and answering a chat completion
through the proxy with the token count asked for.

What stands in, and for what:
- the Dynamo operator's pod building: tests/support/dynamo_pods.py (each service's main container,
  its default command, ports, probes and the env the operator injects, read from the operator's
  Go source; that module's docstring cites it);
- the image nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.1.1: ai-dynamo 1.1.1 and ai-dynamo-runtime
  1.1.1 from PyPI (kubelet.IMAGES);
- Kubernetes discovery (the operator's DYN_DISCOVERY_BACKEND=kubernetes, through the cluster's
  API server): Dynamo's own file discovery, DYN_DISCOVERY_BACKEND=file with DYN_FILE_KV on a
  folder mounted in both pods at /dynamo-kv;
- NATS (the event plane in a cluster): the zmq event plane, DYN_EVENT_PLANE=zmq, through a pyzmq
  XSUB/XPUB forwarder (tests/support/zmq_broker.py) bound to the pod bridge's host address only,
  named to both pods by DYN_ZMQ_BROKER_URL;
- nothing stands in for the addresses the planes advertise: in its own network namespace each pod
  has one routable address (its veth, eth0), which Dynamo finds itself for the tcp request plane
  and the frontend's response stream, as in a cluster. (DYN_TCP_RESPONSE_STREAM_HOST=eth0, the
  interface-name form, picks eth0's IPv6 link-local address and fails to bind: "Failed to start
  TcpListender on fe80::...:0: Invalid argument", so it is not set);
- the weights of Qwen/Qwen3-0.6B: a stand-in of the same architecture with a tokenizer trained
  here (tests/support/standin_model.py) in the Hugging Face cache, mounted in both pods at the
  image user's default HF_HOME (/root/.cache/huggingface), where a download would have put it;
  HF_HUB_OFFLINE=1. Both read its config and tokenizer files; neither loads weights;
- the Service's DNS name and kube-proxy: a hosts entry that only LiteLLM sees, to the frontend
  pod's address.
The rendered worker command and args, and the rendered frontend env, run unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.support import dynamo_pods, kubelet
from tests.support.servingtier import (
    MODELS,
    RUNS,
    Gateway,
    Pods,
    Rendered,
    completion_of,
    engine_python,
    standin,
    wait_probe,
)
from tests.support.wait import wait_until

MODEL = "Qwen/Qwen3-0.6B"
NAMESPACE = "models"
MAX_TOKENS = 16
HF_CACHE = "/root/.cache/huggingface"  # HF_HOME of the image's user (HOME=/root)
FILE_KV = "/dynamo-kv"
BROKER = kubelet.ROOT / "tests" / "support" / "zmq_broker.py"


def graph_of(rendered: Rendered) -> dict[str, Any]:
    return rendered.one(NAMESPACE, "qwen-mocker", "DynamoGraphDeployment", "qwen-mocker")


@pytest.fixture
def broker(pods: Pods) -> Iterator[str]:
    """The event plane's forwarder on the pod bridge's host address: DYN_ZMQ_BROKER_URL."""
    address = pods.network().gateway
    process = subprocess.Popen(
        [str(engine_python("dynamo")), str(BROKER), address],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ports = process.stdout.readline().split()
        assert len(ports) == 2, f"zmq_broker.py exited {process.poll()} before binding"
        xsub, xpub = ports
        yield f"xsub=tcp://{address}:{xsub} , xpub=tcp://{address}:{xpub}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def discovery() -> Iterator[Path]:
    """The folder both pods share as Dynamo's file discovery store."""
    folder = RUNS / "qwen-mocker-discovery"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def stand_in_env(broker_url: str) -> dict[str, str]:
    return {
        "DYN_DISCOVERY_BACKEND": "file",
        "DYN_FILE_KV": FILE_KV,
        "DYN_EVENT_PLANE": "zmq",
        "DYN_ZMQ_BROKER_URL": broker_url,
        "HF_HUB_OFFLINE": "1",
    }


def pod_spec(
    container: Mapping[str, Any], pod: str, broker_url: str, discovery: Path
) -> kubelet.Launch:
    fields = kubelet.pod_fields(pod, NAMESPACE)
    spec = kubelet.launch(container, {}, added_env=stand_in_env(broker_url), fields=fields)
    return replace(spec, mounts=((HF_CACHE, MODELS), (FILE_KV, discovery)))


def served_models(pod: kubelet.Pod) -> list[str]:
    with urllib.request.urlopen(pod.url(dynamo_pods.SERVICE_PORT) + "/v1/models", timeout=5) as r:
        return sorted(m["id"] for m in json.loads(r.read())["data"])


def test_the_rendered_graph_answers_token_counts_through_litellm(
    rendered: Rendered, pods: Pods, gateway: Gateway, broker: str, discovery: Path
) -> None:
    standin(MODEL)
    graph = graph_of(rendered)
    assert sorted(graph["spec"]["services"]) == ["Frontend", "VllmWorker"]
    worker_container = dynamo_pods.main_container(graph, "VllmWorker")
    frontend_container = dynamo_pods.main_container(graph, "Frontend")
    worker_spec = pod_spec(worker_container, "qwen-mocker-worker", broker, discovery)
    frontend_spec = pod_spec(frontend_container, "qwen-mocker-frontend", broker, discovery)
    assert worker_spec.argv == (
        "python3", "-m", "dynamo.mocker", "--model-path", MODEL, "--model-name", MODEL,
        "--speedup-ratio", "1000.0", "--num-gpu-blocks-override", "4096", "--block-size", "16",
        "--max-num-seqs", "64",
    )  # fmt: skip
    assert frontend_spec.argv == ("python3", "-m", "dynamo.frontend")
    assert frontend_spec.env["DYN_ROUTER_MODE"] == "round-robin"  # the rendered env
    assert worker_spec.env["DYN_NAMESPACE"] == frontend_spec.env["DYN_NAMESPACE"]
    assert worker_spec.env["DYN_NAMESPACE"] == "models-qwen-mocker"

    worker = pods.run("qwen-mocker-worker", worker_spec)
    frontend = None
    try:
        wait_probe(worker, worker_container, "startupProbe")
        wait_probe(worker, worker_container, "readinessProbe")
        # The worker's endpoint is in the file store (what the failing-flag test finds empty).
        assert [p for p in discovery.rglob("*") if p.is_file()], "no endpoint registered"
        frontend = pods.run("qwen-mocker-frontend", frontend_spec)
        wait_probe(frontend, frontend_container, "readinessProbe")
        wait_until(
            lambda: served_models(frontend) == [MODEL],
            timeout=120,
            interval=0.5,
            what=f"{MODEL} in the frontend's /v1/models",
        )

        host = dynamo_pods.service_host(graph, "Frontend")
        assert host == "qwen-mocker-frontend.models.svc.cluster.local"
        gateway.resolve(host, frontend.ip)
        sync = gateway.sync(rendered.folder(NAMESPACE, "qwen-mocker"))
        assert sync.returncode == 0, sync.stdout + sync.stderr
        assert f"http://{host}:{dynamo_pods.SERVICE_PORT}/v1" in repr(
            gateway.proxy.call("/model/info")[1]
        )

        status, body = gateway.chat(MODEL, MAX_TOKENS)
        assert status == 200, body
        model, content, tokens = completion_of(body)
        assert (model, tokens) == (MODEL, MAX_TOKENS), body
        # The mocker simulates an engine's timing and token counts, not a model: each step emits
        # a token id of its own drawing, which the frontend detokenizes. With the stand-in's
        # tokenizer (2,048 tokens, standin_model.py) those ids are in the vocabulary, so the text
        # is words without meaning, never empty; what it says is not asserted, only that the
        # frontend's detokenizer produced it from the mocker's tokens.
        assert content.strip(), body
    finally:
        if frontend is not None:
            pods.stop(frontend)
        pods.stop(worker)


def test_a_flag_the_mocker_does_not_know_stops_the_worker(
    rendered: Rendered, pods: Pods, broker: str, discovery: Path
) -> None:
    """A renderer bug made on purpose: the rendered worker's `--speedup-ratio` renamed to
    `--speedup-rate`. The mocker's own parser refuses it, the process exits 2 before it registers
    anything, and so the worker would never go Ready in a cluster. Stand-ins as in the test above."""
    standin(MODEL)
    container = dynamo_pods.main_container(graph_of(rendered), "VllmWorker")
    args = list(container["args"])
    args[args.index("--speedup-ratio")] = "--speedup-rate"
    container["args"] = args
    worker = pods.run(
        "qwen-mocker-worker", pod_spec(container, "qwen-mocker-worker", broker, discovery)
    )
    try:
        code = worker.process.wait(timeout=120)
        assert code == 2, worker.output()
        assert worker.output().splitlines()[-1] == (
            "__main__.py: error: unrecognized arguments: --speedup-rate 1000.0"
        ), worker.output()
        assert [p for p in discovery.rglob("*") if p.is_file()] == []  # no endpoint registered
    finally:
        pods.stop(worker)
