"""Rendered objects must run, not just validate: one test per rule that a schema cannot see
(issue 9's table), and the cross-object invariants, each shown failing on a broken render."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from core.admission.pipeline import admit
from core.checks.flags import unknown_flags
from core.fields.errors import Reason
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from core.rendering.invariants import check_invariants
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_flag_catalogs, bundled_versions
from providers.dynamo import PROVIDER as DYNAMO
from providers.dynamo.render import WORKERS
from tests.support.builders import disaggregated, model_deployment
from tests.support.matrix import cases, engine_args, launched_catalogs
from tests.support.paths import EXAMPLES, ROOT
from tests.support.validation import check

SHIPPED = build_registry()
PINS = bundled_versions()
CATALOGS = bundled_flag_catalogs()
TARGET = GatewayTarget("inference", "gateways")
CACHE = {"name": "cache", "purpose": "modelCache", "size": "100Gi"}


def render(obj: dict[str, Any], registry: ProviderRegistry) -> tuple[ModelDeployment, list[Any]]:
    """What the renderer renders for `obj`: the provider's objects, then the gateway's."""
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    return md, render_model(md, registry, PINS, TARGET)


def worker_args(graph: dict[str, Any], role: str | None = None) -> list[str]:
    """The args of a Dynamo graph's worker of `role` (None: the aggregated worker), whatever the
    engine names its service (providers/dynamo/render.py WORKERS)."""
    (worker,) = [
        s
        for s in graph["spec"]["services"].values()
        if s["componentType"] == "worker" and s.get("subComponentType") == role
    ]
    args: list[str] = worker["extraPodSpec"]["mainContainer"]["args"]
    return args


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


# --- Dynamo -----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("gpus", [1, 2, 4])
@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"enablePrefixCaching": False, "enforceEager": True, "trustRemoteCode": True},
        {"contextLength": 8192},
    ],
    ids=["defaults", "switched", "context"],
)
def test_dynamo_workers_get_only_flags_their_engine_parses(
    shipped: ProviderRegistry, engine: str, gpus: int, switches: dict[str, Any]
) -> None:
    obj = model_deployment(gpu=gpus, provider="dynamo", engine={"type": engine, **switches})
    _, (graph,) = render(obj, shipped)
    catalog = CATALOGS[str(DYNAMO.flags.catalog(engine))]

    assert unknown_flags(worker_args(graph), catalog) == []


def test_dynamo_sglang_spells_prefix_caching_and_eager_as_sglang_does(
    shipped: ProviderRegistry,
) -> None:
    on = model_deployment(gpu=1, provider="dynamo", engine={"type": "sglang"})
    off = model_deployment(
        gpu=1,
        provider="dynamo",
        engine={"type": "sglang", "enablePrefixCaching": False, "enforceEager": True},
    )

    assert worker_args(render(on, shipped)[1][0]) == [
        "--model-path", "org/model", "--served-model-name", "org/model",
    ]  # fmt: skip
    assert worker_args(render(off, shipped)[1][0]) == [
        "--model-path", "org/model", "--served-model-name", "org/model",
        "--disable-radix-cache", "--disable-cuda-graph",
    ]  # fmt: skip


def test_dynamo_vllm_turns_prefix_caching_off_explicitly(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1, provider="dynamo", engine={"type": "vllm", "enablePrefixCaching": False}
    )

    assert worker_args(render(obj, shipped)[1][0]) == [
        "--model", "org/model", "--served-model-name", "org/model", "--no-enable-prefix-caching",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("engine", "flag"),
    [
        ("vllm", "--tensor-parallel-size"),
        ("sglang", "--tp-size"),
        ("trtllm", "--tensor-parallel-size"),
    ],
)
def test_dynamo_workers_run_tensor_parallel_on_all_their_gpus(
    shipped: ProviderRegistry, engine: str, flag: str
) -> None:
    md, objects = render(model_deployment(gpu=4, provider="dynamo", engine=engine), shipped)

    assert worker_args(objects[0])[-2:] == [flag, "4"]
    assert check_invariants(md, objects, SHIPPED) == []


def test_dynamo_disaggregated_workers_run_tensor_parallel_per_component(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("pd", prefill_gpu=2, decode_gpu=1)
    obj["spec"]["provider"] = {"name": "dynamo"}
    md, objects = render(obj, shipped)

    assert "--tensor-parallel-size" in worker_args(objects[0], "prefill")
    assert "--tensor-parallel-size" not in worker_args(objects[0], "decode")
    assert check_invariants(md, objects, SHIPPED) == []


def test_dynamo_sized_volume_with_a_class_is_created_by_the_graph(
    shipped: ProviderRegistry,
) -> None:
    volume = {**CACHE, "storageClassName": "fast"}
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [volume]}},
    )
    md, objects = render(obj, shipped)

    assert [o["kind"] for o in objects] == ["DynamoGraphDeployment"]
    assert objects[0]["spec"]["pvcs"] == [
        {
            "name": "m-cache",
            "create": True,
            "size": "100Gi",
            "storageClass": "fast",
            "volumeAccessMode": "ReadWriteMany",
        }
    ]
    assert check_invariants(md, objects, SHIPPED) == []


def test_dynamo_sized_volume_on_the_default_class_gets_a_rendered_claim(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [dict(CACHE)]}},
    )
    md, objects = render(obj, shipped)
    graph, claim = objects

    assert graph["spec"]["pvcs"] == [{"name": "m-cache", "create": False}]
    assert claim["kind"] == "PersistentVolumeClaim"
    assert claim["metadata"]["name"] == "m-cache"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "100Gi"}},
        "volumeMode": "Filesystem",
    }
    assert check_invariants(md, objects, SHIPPED) == []


# --- HF_HOME and claims for every provider that mounts the cache ------------------------------


@pytest.mark.parametrize("provider", ["dynamo", "llmd", "vllm"])
def test_hf_home_points_at_the_model_cache_mount(shipped: ProviderRegistry, provider: str) -> None:
    volume = {"name": "cache", "purpose": "modelCache", "claimName": "shared", "mountPath": "/hf"}
    obj = model_deployment(
        gpu=1,
        provider=provider,
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [volume]}},
    )
    md, objects = render(obj, shipped)

    if provider == "dynamo":
        env = objects[0]["spec"]["services"]["VllmWorker"]["envs"]
    else:
        env = objects[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "HF_HOME", "value": "/hf"}]
    assert check_invariants(md, objects, SHIPPED) == []


def test_a_users_hf_home_wins(shipped: ProviderRegistry) -> None:
    volume = {"name": "cache", "purpose": "modelCache", "claimName": "shared"}
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [volume]}},
        env=[{"name": "HF_HOME", "value": "/mine"}],
    )
    _, objects = render(obj, shipped)

    assert objects[0]["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "HF_HOME", "value": "/mine"}
    ]


@pytest.mark.parametrize("provider", ["llmd", "vllm"])
def test_sized_volumes_get_their_claim_rendered(shipped: ProviderRegistry, provider: str) -> None:
    volume = {**CACHE, "storageClassName": "", "accessMode": "ReadWriteOnce"}
    obj = model_deployment(
        gpu=1,
        provider=provider,
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [volume]}},
    )
    md, objects = render(obj, shipped)
    (claim,) = by_kind(objects, "PersistentVolumeClaim")

    assert claim["metadata"]["name"] == "m-cache"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "100Gi"}},
        "storageClassName": "",
        "volumeMode": "Filesystem",
    }
    assert objects[0]["spec"]["template"]["spec"]["volumes"][0] == {
        "name": "cache",
        "persistentVolumeClaim": {"claimName": "m-cache"},
    }
    assert check_invariants(md, objects, SHIPPED) == []


# --- KAITO ------------------------------------------------------------------------------------


def test_kaito_pool_selects_the_label_kaito_puts_on_preset_pods(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1, provider="kaito", engine="vllm", gateway={"enabled": True})
    md, objects = render(obj, shipped)
    (pool,) = by_kind(objects, "InferencePool")

    assert pool["spec"]["selector"] == {"matchLabels": {"kaito.sh/workspace": "m"}}
    assert pool["spec"]["targetPorts"] == [{"number": 5000}]
    assert check_invariants(md, objects, SHIPPED) == []


def test_kaito_gated_preset_gets_the_model_access_secret(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1, provider="kaito", engine="vllm", secrets={"huggingFaceToken": "hf"}
    )
    _, (workspace,) = render(obj, shipped)

    assert workspace["inference"] == {
        "preset": {"name": "org/model", "presetOptions": {"modelAccessSecret": "hf"}}
    }


# --- llm-d and Direct vLLM ------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["llmd", "vllm"])
def test_overrides_may_not_replace_the_pod_spec(shipped: ProviderRegistry, provider: str) -> None:
    overrides = {"spec": {"template": {"spec": {"containers": [{"name": "vllm", "image": "x:1"}]}}}}
    obj = model_deployment(gpu=1, provider=provider, engine="vllm", overrides=overrides)
    admission = admit(obj, registry=shipped)

    assert [(e.path, e.reason) for e in admission.errors] == [
        ("spec.provider.overrides.spec.template.spec", Reason.FORBIDDEN)
    ]
    assert "set spec.engine.image, spec.engine.args, spec.env" in admission.errors[0].detail


@pytest.mark.parametrize("provider", ["llmd", "vllm"])
def test_overrides_still_reach_the_deployment_and_pod_metadata(
    shipped: ProviderRegistry, provider: str
) -> None:
    overrides = {
        "spec": {
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"annotations": {"team": "ml"}}},
        }
    }
    obj = model_deployment(gpu=2, provider=provider, engine="vllm", overrides=overrides)
    md, objects = render(obj, shipped)
    deployment = objects[0]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]

    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {"team": "ml"}
    assert container["image"] == f"vllm/vllm-openai:{PINS.vllm}"
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert check_invariants(md, objects, SHIPPED) == []


def test_llmd_serves_the_name_the_gateway_routes(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1, provider="llmd", engine="vllm", gateway={"enabled": True, "modelName": "chat"}
    )
    md, objects = render(obj, shipped)
    args = objects[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    (route,) = by_kind(objects, "HTTPRoute")

    assert args[args.index("--served-model-name") + 1] == "chat"
    assert route["spec"]["rules"][0]["matches"][0]["headers"][0]["value"] == "chat"
    assert check_invariants(md, objects, SHIPPED) == []


def test_examples_use_only_catalogued_flags(shipped: ProviderRegistry) -> None:
    checked = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name.startswith("rejected-"):
            continue
        md, objects = render(yaml.safe_load(path.read_text()), shipped)
        for name, args in engine_args(objects):
            assert name in launched_catalogs(md), path.name
            assert unknown_flags(args, CATALOGS[name]) == [], path.name
            checked.append((path.name, name))
    assert {
        ("vllm-direct-explicit.yaml", "vllm"),
        ("sglang.yaml", "dynamo-sglang"),
        ("dynamo-mocker.yaml", "dynamo-mocker"),
    } <= set(checked)
    assert [n for p, n in checked if p == "dynamo-mocker.yaml"] == ["dynamo-mocker"]


# --- the invariants catch what breaks them ---------------------------------------------------


@pytest.fixture
def llmd_with_gateway(shipped: ProviderRegistry) -> tuple[ModelDeployment, list[dict[str, Any]]]:
    obj = model_deployment(
        gpu=2,
        provider="llmd",
        engine="vllm",
        gateway={"enabled": True},
        model={"id": "org/model", "storage": {"volumes": [dict(CACHE)]}},
    )
    md, objects = render(obj, shipped)
    assert check_invariants(md, objects, SHIPPED) == []
    return md, objects


def _find(objects: list[dict[str, Any]], kind: str, name: str = "m") -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def test_invariant_ports_name_both_objects(
    llmd_with_gateway: tuple[ModelDeployment, list[dict[str, Any]]],
) -> None:
    md, objects = copy.deepcopy(llmd_with_gateway)
    _find(objects, "Service")["spec"]["ports"][0]["targetPort"] = 9000
    _find(objects, "InferencePool")["spec"]["targetPorts"] = [{"number": 8080}]

    assert check_invariants(md, objects, SHIPPED) == [
        "Deployment/m spec.template.spec.containers[0].args --port is 8000 but Service/m spec.ports[0].targetPort is 9000",
        "Deployment/m spec.template.spec.containers[0].args --port is 8000 but InferencePool/m spec.targetPorts[0].number is 8080",
    ]


def test_invariant_pool_selector_must_match_the_pods(
    llmd_with_gateway: tuple[ModelDeployment, list[dict[str, Any]]],
) -> None:
    md, objects = copy.deepcopy(llmd_with_gateway)
    _find(objects, "InferencePool")["spec"]["selector"] = {
        "matchLabels": {"kaito.sh/workspace": "m"}
    }

    assert check_invariants(md, objects, SHIPPED) == [
        "InferencePool/m spec.selector.matchLabels does not match Deployment/m "
        "spec.template.metadata.labels: kaito.sh/workspace differ"
    ]


def test_invariant_every_claim_is_rendered_or_declared(
    llmd_with_gateway: tuple[ModelDeployment, list[dict[str, Any]]],
) -> None:
    md, objects = copy.deepcopy(llmd_with_gateway)
    objects = [o for o in objects if o["kind"] != "PersistentVolumeClaim"]

    assert check_invariants(md, objects, SHIPPED) == [
        "Deployment/m spec.template.spec.volumes[0] mounts claim m-cache, which is neither "
        "rendered (PersistentVolumeClaim) nor declared pre-existing"
    ]


def test_invariant_gpus_equal_tensor_times_pipeline_parallel(
    llmd_with_gateway: tuple[ModelDeployment, list[dict[str, Any]]],
) -> None:
    md, objects = copy.deepcopy(llmd_with_gateway)
    container = _find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["limits"]["nvidia.com/gpu"] = "4"

    assert check_invariants(md, objects, SHIPPED) == [
        "Deployment/m spec.template.spec.containers[0].resources.limits requests 4 GPUs but "
        "Deployment/m spec.template.spec.containers[0].args run tensor parallel 2 x pipeline parallel 1 = 2"
    ]


def test_invariant_routed_name_is_the_served_name(
    llmd_with_gateway: tuple[ModelDeployment, list[dict[str, Any]]],
) -> None:
    md, objects = copy.deepcopy(llmd_with_gateway)
    _find(objects, "HTTPRoute")["spec"]["rules"][0]["matches"][0]["headers"][0]["value"] = "other"

    assert check_invariants(md, objects, SHIPPED) == [
        "HTTPRoute/m spec.rules[0].matches[0].headers[0].value is other but Deployment/m "
        "spec.template.spec.containers[0].args serve org/model"
    ]


def test_invariant_dynamo_mounts_must_be_listed_in_pvcs(shipped: ProviderRegistry) -> None:
    volume = {"name": "cache", "purpose": "modelCache", "claimName": "shared"}
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        model={"id": "org/model", "storage": {"volumes": [volume]}},
    )
    md, objects = render(obj, shipped)
    assert check_invariants(md, objects, SHIPPED) == []
    objects[0]["spec"]["pvcs"] = []

    assert check_invariants(md, objects, SHIPPED) == [
        "DynamoGraphDeployment/m spec.services.VllmWorker.volumeMounts[0] names shared, which spec.pvcs does not list"
    ]


def test_every_flag_runway_emits_is_catalogued_across_the_matrix(shipped: ProviderRegistry) -> None:
    checked: dict[str, int] = {}
    for ident, obj in cases(shipped):
        md, objects = render(obj, shipped)
        for name, args in engine_args(objects):
            assert name in launched_catalogs(md), ident
            assert unknown_flags(args, CATALOGS[name]) == [], ident
            checked[name] = checked.get(name, 0) + 1
    # containers started with flags, by entry point, across the 40 matrix cases that have any:
    # the old 44 engine containers, the 3 mocker workers (aggregated; prefill and decode) and
    # the frontend sidecar of each Dynamo worker service behind a gateway; TRT-LLM's
    # disaggregated cases add 8 workers and 4 sidecars, and the multi-node cases (each Dynamo
    # engine aggregated and disaggregated) 3 workers per engine
    assert checked == {
        "vllm": 16,
        "dynamo-vllm": 15,
        "dynamo-sglang": 15,
        "dynamo-trtllm": 15,
        "dynamo-mocker": 3,
        "dynamo-frontend": 18,
    }


def test_invariant_the_route_name_must_be_the_ray_serve_model_id(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        gpu=1, provider="kuberay", engine="vllm", gateway={"enabled": True, "modelName": "route-me"}
    )
    md, objects = render(obj, shipped)
    assert check_invariants(md, objects, SHIPPED) == []
    (service,) = by_kind(objects, "RayService")
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    config["applications"][0]["args"]["llm_configs"][0]["model_loading_config"]["model_id"] = "x"
    service["spec"]["serveConfigV2"] = json.dumps(config)

    assert check_invariants(md, objects, SHIPPED) == [
        "HTTPRoute/m spec.rules[0].matches[0].headers[0].value is route-me but "
        "RayService/m spec.serveConfigV2 applications[0].args.llm_configs[0].args serve x"
    ]


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_tensor_parallel_pods_get_shared_memory(
    shipped: ProviderRegistry, provider: str, gpus: int
) -> None:
    """vLLM's tensor-parallel ranks share memory through /dev/shm; the container runtime's
    64 MiB default makes NCCL fail or hang, so a pod on more than one GPU mounts it in memory."""
    _, objects = render(model_deployment(gpu=gpus, provider=provider, engine="vllm"), shipped)
    (deployment,) = by_kind(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    shm = [v for v in pod.get("volumes", []) if v["name"] == "shm"]
    (container,) = pod["containers"]
    mounts = [m for m in container.get("volumeMounts", []) if m["name"] == "shm"]

    expected = gpus > 1
    assert shm == (
        [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}}] if expected else []
    )
    assert mounts == ([{"name": "shm", "mountPath": "/dev/shm"}] if expected else [])


def test_disaggregated_llmd_parts_get_shared_memory_by_their_own_gpus(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("m", prefill_gpu=1, decode_gpu=2)
    obj["spec"]["provider"] = {"name": "llmd"}
    obj["spec"]["engine"] = {"type": "vllm"}
    _, objects = render(obj, shipped)

    assert {
        d["metadata"]["name"]: [v["name"] for v in d["spec"]["template"]["spec"].get("volumes", [])]
        for d in by_kind(objects, "Deployment")
    } == {"m-decode": ["shm"], "m-prefill": []}


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ({}, ["--disaggregation-transfer-backend", "nixl"]),
        (
            {"args": {"disaggregation-transfer-backend": "mooncake"}},
            ["--disaggregation-transfer-backend", "mooncake"],
        ),
    ],
    ids=["default", "args"],
)
def test_dynamo_sglang_disaggregated_workers_transfer_kv_over_nixl_unless_told(
    shipped: ProviderRegistry, user: dict[str, Any], expected: list[str]
) -> None:
    """SGLang 0.5.10.post1 defaults --disaggregation-transfer-backend to mooncake, which needs
    RDMA; Runway passes nixl (Dynamo's disaggregated SGLang examples) unless the user chose."""
    obj = disaggregated("m", prefill_gpu=1, decode_gpu=1)
    obj["spec"]["provider"] = {"name": "dynamo"}
    obj["spec"]["engine"] = {"type": "sglang", **user}
    _, (graph, *_) = render(obj, shipped)
    catalog = CATALOGS["dynamo-sglang"]

    for service in ("prefill", "decode"):
        args = worker_args(graph, service)
        backend = [
            a
            for i, a in enumerate(args)
            if a.startswith("--disaggregation-transfer-backend")
            or (i and args[i - 1] == "--disaggregation-transfer-backend")
        ]
        assert backend == expected, service
        assert unknown_flags(args, catalog) == []


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        (0, {"requests": {"cpu": "4", "memory": "8Gi"}}),
        (
            2,
            {
                "limits": {"nvidia.com/gpu": "2", "memory": "8Gi"},
                "requests": {"nvidia.com/gpu": "2", "memory": "8Gi", "cpu": "4"},
            },
        ),
    ],
)
def test_kaito_llamacpp_template_requests_the_gpus_it_runs_on(
    shipped: ProviderRegistry, gpus: int, expected: dict[str, Any]
) -> None:
    """KAITO copies a template Workspace's pod unchanged (template_inference.go at v0.10.0): a
    llama.cpp pod meant for GPUs gets them only when its container asks."""
    obj = model_deployment(
        model_id="org/model/model.gguf",
        gpu=gpus,
        provider="kaito",
        engine={"type": "llamacpp", "image": "ghcr.io/ggml-org/llama.cpp:server"},
        resources={"gpu": {"count": gpus}, "cpu": "4", "memory": "8Gi"},
    )
    _, (workspace,) = render(obj, shipped)
    (container,) = workspace["inference"]["template"]["spec"]["containers"]

    assert container["resources"] == expected


def _container_env(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (first, *_) = objects
    if first["kind"] == "Deployment":
        env: list[dict[str, Any]] = first["spec"]["template"]["spec"]["containers"][0].get(
            "env", []
        )
        return env
    (worker,) = [
        s for s in first["spec"]["services"].values() if s.get("componentType") == "worker"
    ]
    env = worker["extraPodSpec"]["mainContainer"].get("env", [])
    return env


COMPILE = {
    "name": "compile",
    "purpose": "compilationCache",
    "size": "10Gi",
    "mountPath": "/compile",
}


@pytest.mark.parametrize(
    ("provider", "engine", "user_env", "expected"),
    [
        ("vllm", "vllm", [], [{"name": "VLLM_CACHE_ROOT", "value": "/compile"}]),
        ("llmd", "vllm", [], [{"name": "VLLM_CACHE_ROOT", "value": "/compile"}]),
        # Dynamo marks the volume useAsCompilationCache and leaves the rest to its operator
        ("dynamo", "vllm", [], []),
        (
            "vllm",
            "vllm",
            [{"name": "VLLM_CACHE_ROOT", "value": "/mine"}],
            [{"name": "VLLM_CACHE_ROOT", "value": "/mine"}],
        ),
    ],
    ids=["vllm", "llmd", "dynamo", "user-wins"],
)
def test_a_compilation_cache_is_where_vllm_keeps_its_compile_cache(
    shipped: ProviderRegistry,
    provider: str,
    engine: str,
    user_env: list[dict[str, Any]],
    expected: list[dict[str, Any]],
) -> None:
    obj = model_deployment(
        gpu=1,
        provider=provider,
        engine=engine,
        model={"id": "org/model", "storage": {"volumes": [COMPILE]}},
        env=user_env,
    )
    _, objects = render(obj, shipped)

    assert [e for e in _container_env(objects) if e["name"] == "VLLM_CACHE_ROOT"] == expected


def _llmd_pd() -> tuple[ModelDeployment, list[dict[str, Any]]]:
    obj = disaggregated("pd", prefill_gpu=1, decode_gpu=1)
    obj["spec"]["provider"] = {"name": "llmd"}
    obj["spec"]["gateway"] = {"enabled": True}
    return render(obj, SHIPPED)


def _decode_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod: dict[str, Any] = _find(objects, "Deployment", "pd-decode")["spec"]["template"]
    return pod


def test_llmd_pd_renders_every_piece_and_the_pd_picker() -> None:
    md, objects = _llmd_pd()

    assert check_invariants(md, objects, SHIPPED) == []
    config = _find(objects, "ConfigMap", "pd-epp")["data"]["default-plugins.yaml"]
    parsed = yaml.safe_load(config)
    assert [p["type"] for p in parsed["plugins"]] == [
        "prefill-header-handler",
        "prefix-cache-scorer",
        "queue-scorer",
        "prefill-filter",
        "decode-filter",
        "max-score-picker",
        "prefix-based-pd-decider",
        "pd-profile-handler",
    ]
    assert [
        (p["name"], [(r["pluginRef"], r.get("weight")) for r in p["plugins"]])
        for p in parsed["schedulingProfiles"]
    ] == [
        (
            role,
            [
                (f"{role}-filter", None),
                ("max-score-picker", None),
                ("prefix-cache-scorer", 2),
                ("queue-scorer", 1),
            ],
        )
        for role in ("prefill", "decode")
    ]
    # one pool over both roles, on the pods' http port (the decode pods' sidecar)
    pool = _find(objects, "InferencePool", "pd")["spec"]
    assert pool["selector"] == {"matchLabels": {"airunway.ai/model-deployment": "pd"}}
    assert pool["targetPorts"] == [{"number": 8000}]


def test_llmd_pd_runs_the_facts_at_the_pin() -> None:
    """providers/llmd/facts/pd.json (`make facts`, from llm-d-inference-scheduler's sources at
    LLMD_VERSION) is what the P/D pods and picker run: its picker configuration as such, its
    role label, its sidecar image at the pinned tag, and only flags that sidecar defines."""
    facts = json.loads((ROOT / "providers/llmd/facts/pd.json").read_text())
    _md, objects = _llmd_pd()
    config = _find(objects, "ConfigMap", "pd-epp")["data"]["default-plugins.yaml"]
    decode = _decode_pod(objects)
    (sidecar,) = decode["spec"]["initContainers"]

    assert facts["llmd"] == f"v{PINS.pin('llmd')}"
    assert yaml.safe_load(config) == facts["pickerConfig"]
    assert decode["metadata"]["labels"][facts["roleLabel"]] == facts["roles"]["decode"]
    assert sidecar["image"] == f"{facts['sidecar']['image']}:v{PINS.pin('llmd')}"
    assert [a.split("=", 1)[0].lstrip("-") for a in sidecar["args"]] == [
        "port",
        "vllm-port",
        "connector",
        "secure-proxy",
    ]
    assert set(facts["sidecar"]["flags"]) >= {"port", "vllm-port", "connector", "secure-proxy"}
    assert "primaryPort" not in config


def test_llmd_aggregated_picker_keeps_the_provider_configs() -> None:
    obj = model_deployment(gpu=1, provider="llmd", engine="vllm")
    obj["spec"]["gateway"] = {"enabled": True}
    _md, objects = render(obj, SHIPPED)

    config = _find(objects, "ConfigMap", "m-epp")["data"]["default-plugins.yaml"]
    assert "single-profile-handler" in config and "pd-profile-handler" not in config
    assert "initContainers" not in _find(objects, "Deployment")["spec"]["template"]["spec"]
    assert (
        "llm-d.ai/role"
        not in _find(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    )


def _break_label(objects: list[dict[str, Any]]) -> None:
    del _decode_pod(objects)["metadata"]["labels"]["llm-d.ai/role"]


def _break_sidecar(objects: list[dict[str, Any]]) -> None:
    del _decode_pod(objects)["spec"]["initContainers"]


def _break_forward(objects: list[dict[str, Any]]) -> None:
    _decode_pod(objects)["spec"]["initContainers"][0]["args"][1] = "--vllm-port=8001"


def _break_side_channel(objects: list[dict[str, Any]]) -> None:
    del _find(objects, "Deployment", "pd-prefill")["spec"]["template"]["spec"]["containers"][0][
        "env"
    ]


def _break_connector(objects: list[dict[str, Any]]) -> None:
    args = _find(objects, "Deployment", "pd-prefill")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    args[args.index("--kv-transfer-config") + 1] = '{"kv_connector": "LMCacheConnectorV1"}'


def _break_sidecar_flags(objects: list[dict[str, Any]]) -> None:
    args = _decode_pod(objects)["spec"]["initContainers"][0]["args"]
    args[2:] = ["--connector=lmcache", "--secure-proxy=false", "--kv-port=9000", "--cert-path"]


def _break_picker(objects: list[dict[str, Any]]) -> None:
    _find(objects, "ConfigMap", "pd-epp")["data"]["default-plugins.yaml"] = "kind: X\n"


def _break_pool_port(objects: list[dict[str, Any]]) -> None:
    _find(objects, "InferencePool", "pd")["spec"]["targetPorts"] = [{"number": 8200}]


@pytest.mark.parametrize(
    ("breaks", "expected"),
    [
        (
            _break_label,
            "Deployment/pd-decode spec.template.metadata.labels.llm-d.ai/role is None but the "
            "pods are decode pods (the picker's decode-filter selects on it)",
        ),
        (
            _break_sidecar,
            [
                # without the sidecar nothing listens on the pods' http port ...
                "Deployment/pd-decode spec.template.spec.containers[0].args --port is 8200 but "
                "Deployment/pd-decode spec.template.spec.containers[0].ports[http].containerPort "
                "is None",
                "Deployment/pd-decode spec.template.spec.containers[0].args --port is 8200 but "
                "Service/pd-decode spec.ports[0].targetPort is None",
                "Deployment/pd-decode spec.template.spec.containers[0].args --port is 8200 but "
                "InferencePool/pd spec.targetPorts[0].number is 8000",
                # ... and nothing asks a prefill pod
                "Deployment/pd-decode spec.template.spec.initContainers has no routing sidecar "
                "(ghcr.io/llm-d/llm-d-routing-sidecar): decode pods never ask a prefill pod for "
                "the KV cache",
            ],
        ),
        (
            _break_forward,
            "Deployment/pd-decode spec.template.spec.initContainers[0].args --vllm-port is 8001 "
            "but spec.template.spec.containers[0].args --port is 8200",
        ),
        (
            _break_side_channel,
            "Deployment/pd-prefill spec.template.spec.containers[0].env has no "
            "VLLM_NIXL_SIDE_CHANNEL_HOST: vLLM advertises the NIXL side channel on localhost, "
            "which the other role cannot reach",
        ),
        (
            _break_connector,
            "Deployment/pd-prefill spec.template.spec.containers[0].args --kv-transfer-config "
            "has kv_connector LMCacheConnectorV1, not NixlConnector",
        ),
        (
            _break_sidecar_flags,
            [
                f"Deployment/pd-decode spec.template.spec.initContainers[0].args {arg}"
                for arg in (
                    "'--connector=lmcache': the sidecar supports nixlv2, shared-storage, sglang",
                    "'--kv-port=9000': the pinned routing sidecar defines no such flag",
                    "'--cert-path': give the value as --cert-path=<value>",
                )
            ],
        ),
        (
            _break_picker,
            "ConfigMap/pd-epp data.default-plugins.yaml has no pd-profile-handler with a "
            "prefill-filter profile: the picker never sends a request to a prefill pod",
        ),
    ],
)
def test_invariant_llmd_pd_lacks_a_piece(breaks: Any, expected: str | list[str]) -> None:
    md, objects = copy.deepcopy(_llmd_pd())
    breaks(objects)

    expected = [expected] if isinstance(expected, str) else expected
    assert check_invariants(md, objects, SHIPPED) == expected


def test_invariant_ports_reach_the_decode_pods_sidecar() -> None:
    md, objects = copy.deepcopy(_llmd_pd())
    _break_pool_port(objects)

    assert check_invariants(md, objects, SHIPPED) == [
        "Deployment/pd-decode spec.template.spec.initContainers[0].ports[http].containerPort "
        "is 8000 but InferencePool/pd spec.targetPorts[0].number is 8200",
        "Deployment/pd-prefill spec.template.spec.containers[0].args --port is 8000 but "
        "InferencePool/pd spec.targetPorts[0].number is 8200",
    ]


def _dynamo(engine: str, *, gateway: bool, split: bool, router: str | None = None) -> Any:
    obj = disaggregated("pd") if split else model_deployment(gpu=1)
    obj["spec"]["provider"] = {"name": "dynamo"}
    obj["spec"]["engine"] = {"type": engine}
    if router:
        obj["spec"]["provider"]["overrides"] = {"routerMode": router}
    if gateway:
        obj["spec"]["gateway"] = {"enabled": True}
    return render(obj, SHIPPED)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize(
    ("gateway", "router", "published"),
    [(True, None, True), (False, "kv", True), (False, "round-robin", False), (False, None, False)],
)
def test_dynamo_workers_publish_kv_events_when_a_kv_router_reads_them(
    engine: str, gateway: bool, router: str | None, published: bool
) -> None:
    md, objects = _dynamo(engine, gateway=gateway, split=False, router=router)
    args = worker_args(objects[0])
    flag = {"vllm": "--kv-events-config", "sglang": "--kv-events-config"}.get(
        engine, "--publish-events-and-metrics"
    )

    assert (flag in args) is published
    assert check_invariants(md, objects, SHIPPED) == []
    if published:
        args.remove(flag)
        assert check_invariants(md, objects, SHIPPED) == [
            f"DynamoGraphDeployment/m spec.services.{WORKERS[engine][None]}.extraPodSpec."
            f"mainContainer.args has no {flag}: the worker publishes no KV events, so the KV router routes blind"
        ]


def test_dynamo_kv_events_follow_prefix_caching() -> None:
    obj = model_deployment(gpu=1, provider="dynamo", engine="vllm")
    obj["spec"]["engine"]["enablePrefixCaching"] = False
    obj["spec"]["provider"]["overrides"] = {"routerMode": "kv"}
    md, objects = render(obj, SHIPPED)

    assert "--kv-events-config" not in worker_args(objects[0])
    assert check_invariants(md, objects, SHIPPED) == []


@pytest.mark.parametrize("split", [False, True])
def test_invariant_dynamo_frontend_sidecars_honour_the_picker(split: bool) -> None:
    md, objects = copy.deepcopy(_dynamo("vllm", gateway=True, split=split))
    services = objects[0]["spec"]["services"]
    workers = sorted(k for k, v in services.items() if v["componentType"] == "worker")
    for key in workers:
        assert services[key]["frontendSidecar"]["args"] == [
            "-m",
            "dynamo.frontend",
            "--router-mode",
            "direct",
        ]
    assert check_invariants(md, objects, SHIPPED) == []

    services[workers[0]]["frontendSidecar"]["args"] = ["-m", "dynamo.frontend"]
    assert check_invariants(md, objects, SHIPPED) == [
        f"DynamoGraphDeployment/{md.name} spec.services.{workers[0]}.frontendSidecar.args "
        "--router-mode is unset (round-robin): the frontend would choose a worker again instead "
        "of the picker's"
    ]


@pytest.mark.parametrize(
    ("engine", "breaks", "expected"),
    [
        (
            "sglang",
            lambda args: args[: args.index("--disaggregation-transfer-backend")],
            "--disaggregation-transfer-backend is unset (mooncake): SGLang's mooncake backend "
            "needs RDMA",
        ),
        (
            "vllm",
            lambda args: args[: args.index("--kv-transfer-config")],
            "--kv-transfer-config names no NixlConnector",
        ),
        (
            "vllm",
            lambda args: [a if a != "prefill" else "decode" for a in args],
            "--disaggregation-mode is decode but the worker is prefill",
        ),
    ],
)
def test_invariant_dynamo_disaggregated_workers_run_their_role(
    engine: str, breaks: Any, expected: str
) -> None:
    md, objects = copy.deepcopy(_dynamo(engine, gateway=False, split=True))
    assert check_invariants(md, objects, SHIPPED) == []
    name = WORKERS[engine]["prefill"]
    container = objects[0]["spec"]["services"][name]["extraPodSpec"]["mainContainer"]
    container["args"] = breaks(container["args"])

    assert check_invariants(md, objects, SHIPPED) == [
        f"DynamoGraphDeployment/pd spec.services.{name}.extraPodSpec.mainContainer.args {expected}"
    ]


def _picker_profile(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(
        _find(objects, "ConfigMap", f"{name}-epp")["data"]["default-plugins.yaml"]
    )
    return config


@pytest.mark.parametrize(
    ("provider", "engine", "gpus", "expected"),
    [
        # vLLM pods: GAIE's own default scorers over the vLLM metrics the data layer collects
        (
            "vllm",
            "vllm",
            1,
            {
                "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
                "kind": "EndpointPickerConfig",
                "plugins": [
                    {"type": "queue-scorer"},
                    {"type": "kv-cache-utilization-scorer"},
                    {"type": "prefix-cache-scorer"},
                ],
                "schedulingProfiles": [
                    {
                        "name": "default",
                        "plugins": [
                            {"pluginRef": "queue-scorer", "weight": 2},
                            {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                            {"pluginRef": "prefix-cache-scorer", "weight": 3},
                        ],
                    }
                ],
            },
        ),
        # Ray Serve proxies and LocalAI serve no vLLM metrics: prefix affinity, no collection
        *[
            (
                provider,
                engine,
                gpus,
                {
                    "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
                    "kind": "EndpointPickerConfig",
                    "plugins": [{"type": "prefix-cache-scorer"}],
                    "schedulingProfiles": [
                        {
                            "name": "default",
                            "plugins": [{"pluginRef": "prefix-cache-scorer", "weight": 1}],
                        }
                    ],
                    "dataLayer": {},
                },
            )
            for provider, engine, gpus in (("kuberay", "vllm", 2), ("kaito", "llamacpp", 0))
        ],
    ],
)
def test_every_pool_picker_scores_on_what_its_pods_serve(
    provider: str, engine: str, gpus: int, expected: dict[str, Any]
) -> None:
    obj = model_deployment(gpu=gpus, provider=provider, engine=engine)
    obj["spec"]["gateway"] = {"enabled": True}
    if engine == "llamacpp":
        obj["spec"]["engine"]["image"] = "localai/localai:latest"
        obj["spec"]["model"] = {"id": "org/model", "source": "custom"}
    _md, objects = render(obj, SHIPPED)

    assert _picker_profile(objects, "m") == expected


@pytest.mark.parametrize(
    ("engine", "flag"),
    [("vllm", "--max-model-len"), ("sglang", "--context-length"), ("trtllm", "--max-seq-len")],
)
def test_dynamo_workers_take_the_context_length_in_their_own_flag(engine: str, flag: str) -> None:
    obj = model_deployment(gpu=1, provider="dynamo", engine={"type": engine, "contextLength": 8192})
    _md, (graph,) = render(obj, SHIPPED)

    args = worker_args(graph)
    assert args[args.index(flag) : args.index(flag) + 2] == [flag, "8192"]
    assert unknown_flags(args, CATALOGS[f"dynamo-{engine}"]) == []
    assert check(obj, SHIPPED).warnings == ()


def test_dynamo_trtllm_max_seq_len_is_owned() -> None:
    obj = model_deployment(
        gpu=1, provider="dynamo", engine={"type": "trtllm", "args": {"max-seq-len": "4096"}}
    )

    assert [(e.path, e.detail) for e in check(obj, SHIPPED).errors] == [
        ("spec.engine.args[max-seq-len]", "--max-seq-len: set spec.engine.contextLength")
    ]
