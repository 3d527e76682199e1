"""Each provider's render(): the upstream objects for hydrated ModelDeployments."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from providers.modules import plugins
from tests.support.builders import disaggregated, model_deployment
from tests.support.paths import EXAMPLES

PLUGINS = {plugin.name: plugin for plugin in plugins()}

PINS = bundled_versions()


def rendered(obj: dict[str, Any], registry: ProviderRegistry) -> list[dict[str, Any]]:
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    objects: list[dict[str, Any]] = PLUGINS[md.provider_name].render(
        md, PINS, registry.context(md.provider_name)
    )
    return objects


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['apiVersion']} {o['kind']} {o['metadata']['name']}" for o in objects]


def test_every_object_carries_labels_and_a_back_reference(shipped: ProviderRegistry) -> None:
    for name in (
        "vllm-1gpu.yaml",
        "cpu-llamacpp.yaml",
        "vllm-multi-gpu.yaml",
        "llmd-explicit.yaml",
        "vllm-direct-explicit.yaml",
    ):
        for obj in rendered(example(name), shipped):
            meta = obj["metadata"]
            assert meta["namespace"] == "models"
            assert meta["labels"]["app.kubernetes.io/managed-by"] == "runway"
            assert (
                meta["labels"]["airunway.ai/model-deployment"] == example(name)["metadata"]["name"]
            )
            assert (
                meta["annotations"]["airunway.ai/rendered-from"]
                == f"ModelDeployment/models/{example(name)['metadata']['name']}"
            )


def test_rendering_is_deterministic(shipped: ProviderRegistry) -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):  # the admitted ones
        first = json.dumps(rendered(example(path.name), shipped), sort_keys=True)
        assert json.dumps(rendered(example(path.name), shipped), sort_keys=True) == first


def test_dynamo_worker_args_image_and_stripped_transformer_keys(shipped: ProviderRegistry) -> None:
    (graph,) = rendered(example("dynamo-overrides.yaml"), shipped)
    worker = graph["spec"]["services"]["VllmWorker"]

    assert kinds([graph]) == ["nvidia.com/v1alpha1 DynamoGraphDeployment qwen-32b-kv"]
    assert graph["spec"]["backendFramework"] == "vllm"
    assert worker["extraPodSpec"]["mainContainer"] == {
        "image": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{PINS.pin('dynamo')}",
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": [
            "--model",
            "Qwen/Qwen2.5-32B-Instruct",
            "--served-model-name",
            "Qwen/Qwen2.5-32B-Instruct",
            "--enable-prefix-caching",
            "--tensor-parallel-size",
            "2",
            # routerMode kv: the worker publishes the KV events the Frontend's router reads
            "--kv-events-config",
            '{"enable_kv_cache_events": true, "endpoint": "tcp://*:5557", '
            '"publisher": "zmq", "topic": "kv-events"}',
        ],
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    assert worker["resources"] == {"limits": {"gpu": "2"}, "requests": {"gpu": "2"}}
    assert graph["spec"]["services"]["Frontend"]["envs"] == [
        {"name": "DYN_ROUTER_MODE", "value": "kv"}
    ]
    assert graph["spec"]["envs"] == [
        {"name": "DYN_LOG", "value": "info"}
    ]  # the `spec` override, merged
    text = json.dumps(graph)
    assert "routerMode" not in text


def test_dynamo_disaggregated_has_prefill_and_decode_workers(shipped: ProviderRegistry) -> None:
    (graph,) = rendered(example("vllm-disaggregated.yaml"), shipped)
    services = graph["spec"]["services"]

    assert sorted(services) == ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]
    assert (
        services["VllmPrefillWorker"]["replicas"],
        services["VllmDecodeWorker"]["replicas"],
    ) == (1, 2)
    assert services["VllmPrefillWorker"]["subComponentType"] == "prefill"
    assert services["VllmPrefillWorker"]["resources"]["limits"] == {"gpu": "2", "memory": "64Gi"}
    assert services["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"]["args"][-4:] == [
        "--disaggregation-mode",
        "decode",
        "--kv-transfer-config",
        '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}',
    ]
    assert all(s["envFromSecret"] == "hf-token" for s in services.values())


@pytest.mark.parametrize(
    ("engine", "worker", "module", "model_flag", "context_flag"),
    [
        ("sglang", "decode", "dynamo.sglang", "--model-path", "--context-length"),
        ("trtllm", "TRTLLMWorker", "dynamo.trtllm", "--model", None),
    ],
)
def test_dynamo_engine_specific_flags(
    engine: str,
    worker: str,
    module: str,
    model_flag: str,
    context_flag: str | None,
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(engine={"type": engine, "contextLength": 8192}, gpu=1)
    (graph,) = rendered(obj, shipped)
    main = graph["spec"]["services"][worker]["extraPodSpec"]["mainContainer"]

    assert main["command"] == ["python3", "-m", module]
    assert main["args"][:2] == [model_flag, "org/model"]
    assert (
        (context_flag in main["args"])
        if context_flag
        else ("--max-model-len" not in main["args"] and "--context-length" not in main["args"])
    )


def test_kaito_vllm_is_a_preset_on_one_instance_with_the_override_instance_type(
    shipped: ProviderRegistry,
) -> None:
    (workspace,) = rendered(example("kaito-overrides.yaml"), shipped)

    assert kinds([workspace]) == ["kaito.sh/v1beta1 Workspace phi-kaito"]
    assert workspace["resource"] == {
        "count": 1,
        "instanceType": "Standard_NC24ads_A100_v4",
        "labelSelector": {
            "matchLabels": {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
        },
    }
    assert workspace["inference"] == {
        "preset": {"name": "microsoft/Phi-4-mini-instruct"},
        "config": "phi-inference-params",
    }
    assert "spec" not in workspace


def test_kaito_llamacpp_is_a_template_serving_the_gguf(shipped: ProviderRegistry) -> None:
    (workspace,) = rendered(example("llamacpp-gpu.yaml"), shipped)
    (container,) = workspace["inference"]["template"]["spec"]["containers"]

    assert container["image"] == "ghcr.io/kaito-project/aikit/runners/llama-cpp-cuda:v0.21.0"
    assert container["args"] == [
        "https://huggingface.co/bartowski/Qwen2.5-7B-Instruct-GGUF/resolve/main/"
        "Qwen2.5-7B-Instruct-Q4_K_M.gguf",
        "--address=:5000",
    ]
    assert workspace["inference"]["template"]["metadata"]["labels"] == {
        "airunway.ai/model-deployment": "qwen-gguf"
    }


def test_kaito_cpu_model_from_a_premade_image_keeps_its_config_and_no_model_argument(
    shipped: ProviderRegistry,
) -> None:
    (workspace,) = rendered(example("cpu-llamacpp.yaml"), shipped)
    (container,) = workspace["inference"]["template"]["spec"]["containers"]

    assert container["args"] == ["--config-file=/config.yaml", "--address=:5000"]
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "8Gi"}}
    assert workspace["resource"]["labelSelector"]["matchLabels"] == {"kubernetes.io/os": "linux"}


def test_kuberay_rayservice_serves_the_model_with_ray_serve_llm(shipped: ProviderRegistry) -> None:
    (service,) = rendered(example("vllm-multi-gpu.yaml"), shipped)
    serve = json.loads(service["spec"]["serveConfigV2"])
    (workers,) = service["spec"]["rayClusterConfig"]["workerGroupSpecs"]

    assert kinds([service]) == ["ray.io/v1 RayService llama-70b"]
    assert serve["applications"][0]["import_path"] == "ray.serve.llm:build_openai_app"
    (config,) = serve["applications"][0]["args"]["llm_configs"]
    assert config["engine_kwargs"] == {
        "tensor_parallel_size": 4,
        "enable_prefix_caching": True,
        "gpu_memory_utilization": 0.92,
    }
    assert config["model_loading_config"] == {
        "model_id": "llama-70b",
        "model_source": "meta-llama/Llama-3.1-70B-Instruct",
    }
    assert (workers["replicas"], workers["minReplicas"], workers["maxReplicas"]) == (2, 2, 2)
    assert workers["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "4",
        "memory": "320Gi",
    }
    assert workers["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert (
        service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0][
            "image"
        ]
        == f"rayproject/ray-llm:{PINS.pin('ray')}-py311-cu128"
    )


def test_kuberay_says_overrides_are_ignored(shipped: ProviderRegistry) -> None:
    (service,) = rendered(
        model_deployment(gpu=2, provider="kuberay", overrides={"head": {"x": 1}}), shipped
    )

    assert (
        service["metadata"]["annotations"]["airunway.ai/overrides-ignored"]
        == "spec.provider.overrides is not used by the kuberay provider"
    )
    assert "head" not in json.dumps(
        service["spec"]["rayClusterConfig"]["headGroupSpec"]
    ) or '"x"' not in json.dumps(service)


def test_direct_vllm_deployment_and_service(shipped: ProviderRegistry) -> None:
    deployment, service = rendered(example("vllm-direct-explicit.yaml"), shipped)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]

    assert kinds([deployment, service]) == [
        "apps/v1 Deployment phi-direct",
        "v1 Service phi-direct",
    ]
    assert container["image"] == f"vllm/vllm-openai:{PINS.vllm}"
    assert container["args"] == [
        "--host", "0.0.0.0", "--port", "8000",
        "--model", "microsoft/Phi-4-mini-instruct", "--max-model-len", "16384",
        "--enable-prefix-caching", "--max-num-seqs", "64", "--enable-log-requests",
    ]  # fmt: skip
    assert container["volumeMounts"] == [{"name": "cache", "mountPath": "/model-cache"}]
    assert container["env"] == [{"name": "HF_HOME", "value": "/model-cache"}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [
        {"name": "cache", "persistentVolumeClaim": {"claimName": "shared-model-cache"}}
    ]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}
    ]


def test_direct_vllm_multi_gpu_gets_shared_memory_and_tensor_parallelism(
    shipped: ProviderRegistry,
) -> None:
    deployment, _ = rendered(model_deployment(gpu=4, provider="vllm", engine="vllm"), shipped)
    pod = deployment["spec"]["template"]["spec"]

    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}} in pod["volumes"]
    assert pod["containers"][0]["args"][-2:] == ["--tensor-parallel-size", "4"]
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "4"},
        "requests": {"nvidia.com/gpu": "4"},
    }


def test_spec_overrides_merge_but_cannot_break_the_selector(shipped: ProviderRegistry) -> None:
    overrides = {
        "spec": {
            "selector": {"matchLabels": {"x": "y"}},
            "revisionHistoryLimit": 5,
            "template": {"metadata": {"labels": {"team": "ml"}}},
        }
    }
    deployment, _ = rendered(
        model_deployment(gpu=1, provider="llmd", engine="vllm", overrides=overrides), shipped
    )

    assert deployment["spec"]["selector"] == {
        "matchLabels": {
            "airunway.ai/model-deployment": "m",
            "app.kubernetes.io/component": "server",
        }
    }
    assert deployment["spec"]["revisionHistoryLimit"] == 5
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "ml"


def test_llmd_disaggregated_renders_decode_first_then_prefill(shipped: ProviderRegistry) -> None:
    """llm-d P/D as llm-d-inference-scheduler wires it: role labels, NixlConnector kv_both on
    both roles with the side channel on the pod IP, the decode pods' routing sidecar on the
    pod's http port in front of vLLM on 8200, and vLLM's three probes on both roles."""
    obj = disaggregated("pd", prefill_gpu=2, decode_gpu=1)
    obj["spec"]["provider"] = {"name": "llmd"}

    objects = rendered(obj, shipped)

    assert kinds(objects) == [
        "apps/v1 Deployment pd-decode",
        "v1 Service pd-decode",
        "apps/v1 Deployment pd-prefill",
        "v1 Service pd-prefill",
    ]
    nixl = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'
    side_channel = {
        "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
    }
    assert objects[0]["spec"]["template"] == {
        "metadata": {
            "labels": {
                "airunway.ai/model-deployment": "pd",
                "llm-d.ai/role": "decode",
                "app.kubernetes.io/component": "decode",
            }
        },
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": f"vllm/vllm-openai:{PINS.vllm}",
                    "args": [
                        "--port",
                        "8200",
                        "--model",
                        "org/model",
                        "--enable-prefix-caching",
                        "--kv-transfer-config",
                        nixl,
                    ],
                    "ports": [{"name": "vllm", "containerPort": 8200, "protocol": "TCP"}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": "1"},
                        "requests": {"nvidia.com/gpu": "1"},
                    },
                    "startupProbe": {
                        "httpGet": {"path": "/health", "port": "vllm"},
                        "periodSeconds": 10,
                        "failureThreshold": 60,
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/health", "port": "vllm"},
                        "periodSeconds": 10,
                        "failureThreshold": 3,
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/health", "port": "vllm"},
                        "periodSeconds": 5,
                        "failureThreshold": 3,
                    },
                    "env": [side_channel],
                    "securityContext": {"allowPrivilegeEscalation": False},
                }
            ],
            "initContainers": [
                {
                    "name": "routing-sidecar",
                    "image": f"ghcr.io/llm-d/llm-d-routing-sidecar:v{PINS.pin('llmd')}",
                    "args": [
                        "--port=8000",
                        "--vllm-port=8200",
                        "--connector=nixlv2",
                        "--secure-proxy=false",
                    ],
                    "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
                    "restartPolicy": "Always",
                    "securityContext": {"allowPrivilegeEscalation": False},
                }
            ],
            "enableServiceLinks": False,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        },
    }
    prefill = objects[2]["spec"]["template"]
    assert prefill["metadata"]["labels"] == {
        "airunway.ai/model-deployment": "pd",
        "llm-d.ai/role": "prefill",
        "app.kubernetes.io/component": "prefill",
    }
    assert "initContainers" not in prefill["spec"]
    (container,) = prefill["spec"]["containers"]
    assert container["args"] == [
        "--port",
        "8000",
        "--model",
        "org/model",
        "--enable-prefix-caching",
        "--tensor-parallel-size",
        "2",
        "--kv-transfer-config",
        nixl,
    ]
    assert container["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert container["env"] == [side_channel]
    # vLLM's startup, liveness and readiness probes, as Direct vLLM's (core/rendering/engines.py),
    # on its own port: behind the sidecar on decode pods, the pod's http port on prefill pods.
    assert {k: container[k]["httpGet"] for k in container if k.endswith("Probe")} == {
        "startupProbe": {"path": "/health", "port": "http"},
        "livenessProbe": {"path": "/health", "port": "http"},
        "readinessProbe": {"path": "/health", "port": "http"},
    }
    # Both Services reach the pods' http port: the sidecar on decode pods, vLLM on prefill pods.
    assert [o["spec"]["ports"] for o in objects[1::2]] == [
        [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    ] * 2


def test_llmd_disaggregated_user_side_channel_host_wins(shipped: ProviderRegistry) -> None:
    obj = disaggregated("pd")
    obj["spec"]["provider"] = {"name": "llmd"}
    obj["spec"]["env"] = [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "10.0.0.1"}]

    objects = rendered(obj, shipped)

    assert [
        o["spec"]["template"]["spec"]["containers"][0]["env"]
        for o in objects
        if o["kind"] == "Deployment"
    ] == [[{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "10.0.0.1"}]] * 2


def test_hugging_face_token_is_only_ever_a_secret_reference(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine="vllm",
        secrets={"huggingFaceToken": "hf"},
        env=[{"name": "HF_TOKEN", "value": "hf_plain"}],
    )

    deployment, _ = rendered(obj, shipped)

    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}}
    ]
    assert "hf_plain" not in json.dumps(deployment)


def test_dynamo_with_the_gateway_runs_its_own_picker_and_frontend_sidecars(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        gateway={"enabled": True},
        secrets={"huggingFaceToken": "hf"},
        overrides={"epp": {"image": "registry.example.com/epp:7"}},
    )

    (graph,) = rendered(obj, shipped)
    services = graph["spec"]["services"]

    assert sorted(services) == ["Epp", "VllmWorker"]
    assert services["Epp"]["componentType"] == "epp"
    assert services["Epp"]["extraPodSpec"]["mainContainer"]["image"] == "registry.example.com/epp:7"
    assert services["Epp"]["envs"] == [
        {"name": "DYN_KV_CACHE_BLOCK_SIZE", "value": "16"},
        {"name": "DYN_MODEL_NAME", "value": "org/model"},
        {"name": "DYN_DECODE_FALLBACK", "value": "true"},
        {"name": "DYN_ENFORCE_DISAGG", "value": "false"},
    ]
    assert [p["name"] for p in services["Epp"]["eppConfig"]["config"]["schedulingProfiles"]] == [
        "decode"
    ]
    assert services["VllmWorker"]["frontendSidecar"] == {
        "image": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{PINS.pin('dynamo')}",
        "args": ["-m", "dynamo.frontend", "--router-mode", "direct"],
        "envFromSecret": "hf",
    }
    assert '"epp": {' not in json.dumps(graph["spec"]) and "overrides" not in json.dumps(graph)


def test_dynamo_disaggregated_picker_has_prefill_and_decode_profiles(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("pd")
    obj["spec"]["gateway"] = {"enabled": True}

    (graph,) = rendered(obj, shipped)
    epp = graph["spec"]["services"]["Epp"]

    assert [p["name"] for p in epp["eppConfig"]["config"]["schedulingProfiles"]] == [
        "prefill",
        "decode",
    ]
    assert epp["envs"] == [
        {"name": "DYN_KV_CACHE_BLOCK_SIZE", "value": "16"},
        {"name": "DYN_MODEL_NAME", "value": "org/model"},
        {"name": "DYN_DECODE_FALLBACK", "value": "false"},
        {"name": "DYN_ENFORCE_DISAGG", "value": "true"},
    ]
    # direct in both modes: the frontend honours the picker's prefill and decode choice
    assert graph["spec"]["services"]["VllmPrefillWorker"]["frontendSidecar"]["args"] == [
        "-m",
        "dynamo.frontend",
        "--router-mode",
        "direct",
    ]
