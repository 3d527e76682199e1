"""KubeRay: the engine kwargs it admits, a replica across worker pods (pipeline parallelism), the
model cache on the head and every worker, and the invariants that see Ray Serve LLM's configs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from core.rendering.invariants import check_invariants
from kubeio.registry import build_registry
from kubeio.shipped import bundled_flag_catalogs, bundled_versions
from tests.support.builders import model_deployment
from tests.support.matrix import cases
from tests.support.paths import EXAMPLES
from tests.support.rayservices import kuberay_cases

SHIPPED = build_registry()
PINS = bundled_versions()
IMAGE = f"rayproject/ray-llm:{PINS.pin('ray')}-py311-cu128"
LABELS = {"app.kubernetes.io/managed-by": "runway", "airunway.ai/model-deployment": "m"}
ANNOTATIONS = {"airunway.ai/rendered-from": "ModelDeployment/ns/m"}
CACHE = {"name": "cache", "purpose": "modelCache", "size": "100Gi"}
PINNED_RAY = "the pinned Ray's ray/llm/_internal/serve/engines/vllm/vllm_models.py"


def verdict(obj: dict[str, Any]) -> tuple[list[tuple[str, str, str]], tuple[str, ...]]:
    admission = admit(obj, registry=SHIPPED)
    errors = [(e.path, str(e.reason), e.detail) for e in admission.errors]
    return errors, admission.validation_warnings


def rendered(obj: dict[str, Any]) -> tuple[ModelDeployment, list[dict[str, Any]]]:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    return md, render_model(md, SHIPPED, PINS, GatewayTarget("inference", "gateways"))


def kuberay(gpu: int = 4, args: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    engine = {"type": "vllm", **({"args": args} if args else {})}
    return model_deployment(gpu=gpu, provider="kuberay", engine=engine, **spec)


def serve(service: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(service["spec"]["serveConfigV2"])
    return config


# --- admission ----------------------------------------------------------------------------------


def test_engine_kwargs_ray_would_refuse_are_refused_with_the_reason() -> None:
    """Before, every key went into engine_kwargs: Ray refuses one vLLM 0.18 lacks ("Unknown engine
    argument"), replaces or refuses the executor backend, and serves on its own proxy."""
    obj = kuberay(
        args={"max-num-queued-reqs": "4", "distributed-executor-backend": "mp", "port": "9000"}
    )

    assert verdict(obj) == (
        [
            (
                "spec.engine.args[distributed-executor-backend]",
                "Forbidden",
                "--distributed-executor-backend: Ray Serve LLM sets it: ray on GPUs, mp on CPUs, "
                f"and refuses any other value on GPUs ({PINNED_RAY}:107-121)",
            ),
            (
                "spec.engine.args[max-num-queued-reqs]",
                "Invalid value",
                f"--max-num-queued-reqs is not a flag of ray-serve-llm {PINS.pin('ray')} "
                "(vllm 0.18.0); did you mean --max-num-seqs?",
            ),
            (
                "spec.engine.args[port]",
                "Forbidden",
                "--port: Ray Serve's HTTP proxy serves the model on port 8000 (the RayService's "
                "serve port); vLLM's own API server does not run under Ray Serve LLM, so this "
                "would change nothing",
            ),
        ],
        (),
    )
    # a flag of the vLLM server Direct vLLM runs (VLLM_VERSION), not of the ray-llm image's vLLM
    direct = {"type": "vllm", "args": {"max-num-queued-reqs": "4"}}
    assert verdict(model_deployment(gpu=4, provider="vllm", engine=direct)) == ([], ())


def test_an_unknown_kwarg_only_warns_under_another_image() -> None:
    obj = kuberay(args={"max-num-queued-reqs": "4"})
    obj["spec"]["engine"]["image"] = "registry.example/ray-llm:custom"

    assert verdict(obj) == (
        [],
        (
            f"spec.engine.args[max-num-queued-reqs]: --max-num-queued-reqs is not a flag of "
            f"ray-serve-llm {PINS.pin('ray')} (vllm 0.18.0); did you mean --max-num-seqs? (not "
            "refused: spec.engine.image runs registry.example/ray-llm:custom, which the catalog "
            "may not describe)",
        ),
    )


def test_extra_args_are_refused_since_nothing_would_pass_them() -> None:
    """Before, spec.engine.extraArgs were admitted and silently not rendered."""
    obj = kuberay()
    obj["spec"]["engine"]["extraArgs"] = ["--max-num-seqs", "4"]

    assert verdict(obj) == (
        [
            (
                "spec.engine.extraArgs",
                "Forbidden",
                "Ray Serve LLM starts vLLM from engine_kwargs, not a command line (the pinned "
                "Ray's ray/llm/_internal/serve/engines/vllm/vllm_models.py:146-191), so these "
                "would be dropped: set them in spec.engine.args, which become engine_kwargs",
            )
        ],
        (),
    )


def test_a_claim_for_one_pod_is_refused_and_one_for_one_node_warned_about() -> None:
    volumes = [
        {**CACHE, "accessMode": "ReadWriteOncePod"},
        {"name": "b", "size": "1Gi", "accessMode": "ReadWriteOnce", "mountPath": "/b"},
    ]
    obj = kuberay(model={"id": "org/model", "storage": {"volumes": volumes}})

    assert verdict(obj) == (
        [
            (
                "spec.model.storage.volumes[0].accessMode",
                "Forbidden",
                "KubeRay mounts the volume on the Ray head and on every worker pod, at least two "
                "pods, and ReadWriteOncePod lets only one pod mount it: the others would never "
                "start; use ReadWriteMany (the default)",
            )
        ],
        (
            "spec.model.storage.volumes[1].accessMode: ReadWriteOnce lets the pods of one node "
            "only mount it, and KubeRay mounts it on the Ray head and on every worker pod "
            "(workers of one replica span nodes when pipeline-parallel-size > 1): a pod "
            "scheduled elsewhere waits on a Multi-Attach error",
        ),
    )


def test_kuberay_admits_a_replica_across_nodes() -> None:
    assert verdict(kuberay(args={"pipeline-parallel-size": "2"})) == ([], ())
    assert SHIPPED.plugin("kuberay").multinode.offered is True  # type: ignore[union-attr]


# --- render -------------------------------------------------------------------------------------


def test_a_replica_spans_pipeline_parallel_worker_pods_of_gpu_count_gpus() -> None:
    """TP = gpu.count, PP = P; the group has replicas x P pods of gpu.count GPUs, and Ray places
    each replica's TP x PP one-GPU bundles with PACK (Ray's default, written out)."""
    md, objects = rendered(
        kuberay(gpu=8, args={"pipeline-parallel-size": "2"}, scaling={"replicas": 3})
    )
    (service,) = objects

    assert serve(service)["applications"][0]["args"]["llm_configs"] == [
        {
            "deployment_config": {"autoscaling_config": {"max_replicas": 3, "min_replicas": 3}},
            "engine_kwargs": {
                "enable_prefix_caching": True,
                "pipeline_parallel_size": 2,
                "tensor_parallel_size": 8,
            },
            "model_loading_config": {"model_id": "org/model", "model_source": "org/model"},
            "placement_group_config": {"bundle_per_worker": {"GPU": 1}, "strategy": "PACK"},
        }
    ]
    (group,) = service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    assert {k: v for k, v in group.items() if k != "template"} == {
        "groupName": "gpu-workers",
        "replicas": 6,
        "minReplicas": 6,
        "maxReplicas": 6,
        "numOfHosts": 1,
        "rayStartParams": {},
    }
    assert group["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "8", "memory": "32Gi"},
        "requests": {"nvidia.com/gpu": "8", "memory": "32Gi"},
    }
    assert check_invariants(md, objects, SHIPPED) == []


def test_disaggregated_roles_each_span_pipeline_parallel_pods() -> None:
    obj = model_deployment(
        provider="kuberay",
        mode="disaggregated",
        engine={"type": "vllm", "args": {"pipeline-parallel-size": "2"}},
        scaling={
            "prefill": {"gpu": {"count": 2}, "replicas": 2},
            "decode": {"gpu": {"count": 4}},
        },
    )
    md, objects = rendered(obj)
    (service,) = objects
    args = serve(service)["applications"][0]["args"]

    assert {
        role: (
            c["engine_kwargs"]["tensor_parallel_size"],
            c["engine_kwargs"]["pipeline_parallel_size"],
        )
        for role, c in args.items()
    } == {"prefill_config": (2, 2), "decode_config": (4, 2)}
    assert [
        (
            g["groupName"],
            g["replicas"],
            g["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        )
        for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    ] == [("prefill-workers", 4, "2"), ("decode-workers", 2, "4")]
    assert check_invariants(md, objects, SHIPPED) == []


def test_one_node_renders_no_placement_and_one_pod_per_replica() -> None:
    _, objects = rendered(kuberay(gpu=2, scaling={"replicas": 2}))
    (service,) = objects
    (config,) = serve(service)["applications"][0]["args"]["llm_configs"]

    assert sorted(config) == ["deployment_config", "engine_kwargs", "model_loading_config"]
    assert config["engine_kwargs"] == {"enable_prefix_caching": True, "tensor_parallel_size": 2}
    assert service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] == 2


def test_the_model_cache_is_on_the_head_and_every_worker_with_its_claim() -> None:
    """Before, spec.model.storage was dropped: no claim, no mount, no HF_HOME."""
    md, objects = rendered(kuberay(model={"id": "org/model", "storage": {"volumes": [CACHE]}}))
    service, claim = objects
    cluster = service["spec"]["rayClusterConfig"]
    pods = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    volume = {"name": "cache", "persistentVolumeClaim": {"claimName": "m-cache"}}

    for pod in pods:
        spec = pod["template"]["spec"]
        (container,) = spec["containers"]
        assert spec["volumes"] == [volume]
        assert container["volumeMounts"] == [{"name": "cache", "mountPath": "/model-cache"}]
        assert container["env"] == [{"name": "HF_HOME", "value": "/model-cache"}]
    assert claim == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "m-cache",
            "labels": LABELS,
            "annotations": ANNOTATIONS,
            "namespace": "ns",
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "100Gi"}},
            "volumeMode": "Filesystem",
        },
    }
    assert check_invariants(md, objects, SHIPPED) == []


def test_a_pre_existing_claim_is_mounted_and_not_rendered() -> None:
    volumes = [
        {"name": "weights", "claimName": "shared", "mountPath": "/weights", "readOnly": True}
    ]
    _, objects = rendered(kuberay(model={"id": "org/model", "storage": {"volumes": volumes}}))
    (service,) = objects
    head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]

    assert head["volumes"] == [
        {"name": "weights", "persistentVolumeClaim": {"claimName": "shared"}}
    ]
    assert head["containers"][0]["volumeMounts"] == [
        {"name": "weights", "mountPath": "/weights", "readOnly": True}
    ]
    assert head["containers"][0]["env"] == []  # no model cache: no HF_HOME


# --- invariants ---------------------------------------------------------------------------------


def tampered(objects: list[dict[str, Any]], change: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(objects)
    change(out[0])
    return out


def _set_kwargs(service: dict[str, Any], **kwargs: Any) -> None:
    config = serve(service)
    config["applications"][0]["args"]["llm_configs"][0]["engine_kwargs"].update(kwargs)
    service["spec"]["serveConfigV2"] = json.dumps(config)


def test_the_gpu_invariant_sees_engine_kwargs_against_the_worker_group() -> None:
    """Before, a RayService was invisible to "GPUs = TP x PP": engine_kwargs TP 8 x PP 2 on a
    group of 8-GPU pods, one pod per replica, was written."""
    md, objects = rendered(kuberay(gpu=8))
    broken = tampered(objects, lambda s: _set_kwargs(s, pipeline_parallel_size=2))

    assert check_invariants(md, broken, SHIPPED) == [
        "RayService/m spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0]"
        ".resources.limits requests 8 GPUs but RayService/m spec.serveConfigV2 applications[0]"
        ".args.llm_configs[0].args run tensor parallel 8 x pipeline parallel 2 = 16"
    ]


def test_the_gpu_invariant_counts_the_pods_a_replica_spans() -> None:
    md, objects = rendered(kuberay(gpu=4, args={"pipeline-parallel-size": "2"}))
    broken = tampered(objects, lambda s: _set_kwargs(s, tensor_parallel_size=2))

    assert check_invariants(md, broken, SHIPPED) == [
        "RayService/m spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0]"
        ".resources.limits requests 4 GPUs on each of 2 pods but RayService/m spec.serveConfigV2 "
        "applications[0].args.llm_configs[0].args run tensor parallel 2 x pipeline parallel 2 = 4"
    ]


def _group(service: dict[str, Any], **fields: Any) -> None:
    service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(fields)


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        (
            lambda s: _group(s, replicas=3),
            [
                "RayService/m spec.rayClusterConfig.workerGroupSpecs[0].replicas is 3, not a whole "
                "number of the 2 Ray Serve replicas of spec.serveConfigV2 applications[0].args."
                "llm_configs[0]"
            ],
        ),
        (
            lambda s: _group(s, groupName="other"),
            [
                "RayService/m spec.serveConfigV2 applications[0].args.llm_configs[0] has no "
                "worker group gpu-workers"
            ],
        ),
        (
            lambda s: s["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"][
                "containers"
            ][0].pop("volumeMounts"),
            [
                "RayService/m spec.rayClusterConfig.headGroupSpec.template.spec.containers[0]"
                ".volumeMounts lacks cache of spec.model.storage.volumes"
            ],
        ),
    ],
    ids=["partial-replica", "no-group", "head-without-cache"],
)
def test_kuberay_invariants_name_a_broken_wiring(change: Any, problems: list[str]) -> None:
    md, objects = rendered(
        kuberay(
            gpu=2,
            scaling={"replicas": 2},
            model={"id": "org/model", "storage": {"volumes": [CACHE]}},
        )
    )

    assert check_invariants(md, objects, SHIPPED) == []
    assert check_invariants(md, tampered(objects, change), SHIPPED) == problems


def test_a_claim_that_is_neither_rendered_nor_declared_is_named() -> None:
    md, objects = rendered(kuberay(model={"id": "org/model", "storage": {"volumes": [CACHE]}}))
    without_claim = copy.deepcopy(objects[:1])

    assert check_invariants(md, without_claim, SHIPPED) == [
        "RayService/m mounts claim m-cache (spec.rayClusterConfig.headGroupSpec.template, "
        "spec.rayClusterConfig.workerGroupSpecs[0].template), which is neither rendered "
        "(PersistentVolumeClaim) nor declared pre-existing"
    ]


def test_every_engine_kwarg_runway_writes_is_one_ray_serve_llm_accepts() -> None:
    """The kuberay catalog is the split Ray makes (FrontendArgs + AsyncEngineArgs fields), so a
    kwarg Runway writes that it lacks is one Ray would refuse as an unknown engine argument."""
    catalog = bundled_flag_catalogs()["kuberay"]
    docs = [doc for _, doc in kuberay_cases(EXAMPLES)]
    matrix = cases(SHIPPED)
    docs += [doc for _, doc in matrix if doc["spec"]["provider"]["name"] == "kuberay"]
    written = set()
    for doc in docs:
        _, objects = rendered(doc)
        for obj in (o for o in objects if o["kind"] == "RayService"):
            for app in serve(obj)["applications"]:
                args = app["args"]
                for config in args.get("llm_configs") or [v for v in args.values()]:
                    written |= {"--" + k.replace("_", "-") for k in config["engine_kwargs"]}

    assert sorted(f for f in written if not catalog.knows(f)) == []
    assert {"--tensor-parallel-size", "--pipeline-parallel-size", "--kv-transfer-config"} <= written
