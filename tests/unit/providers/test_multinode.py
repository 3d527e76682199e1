"""A replica across nodes on llm-d and Direct vLLM: a LeaderWorkerSet group per replica
(core/rendering/leaderworkerset.py), its leaders behind the Service and the pool, its admission
rules, its status, and the invariants that hold it together."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.inferencegateway import GatewayTarget
from core.rendering.invariants import check_invariants
from core.selection.configs import ProviderRegistry
from core.status.leaderworkerset import leaderworkerset_workload
from kubeio.shipped import bundled_versions
from kubeio.upstream import upstream_kinds
from providers.modules import plugins
from renderer.output.render import RenderContext, render_one
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import model_deployment

PLUGINS = {plugin.name: plugin for plugin in plugins()}
PINS = bundled_versions()
VLLM_IMAGE = f"vllm/vllm-openai:{PINS.vllm}"
LABELS = {"airunway.ai/model-deployment": "big", "app.kubernetes.io/managed-by": "runway"}
META = {
    "name": "big",
    "namespace": "ns",
    "labels": LABELS,
    "annotations": {"airunway.ai/rendered-from": "ModelDeployment/ns/big"},
}
POD_LABELS = {"airunway.ai/model-deployment": "big", "app.kubernetes.io/component": "server"}
LEADER = {"leaderworkerset.sigs.k8s.io/worker-index": "0"}


def multinode(provider: str, *, nodes: Any = "2", gpu: int = 4, **spec: Any) -> dict[str, Any]:
    engine = {"type": "vllm", "args": {"pipeline-parallel-size": nodes}}
    engine.update(spec.pop("engine", {}))
    return model_deployment(
        "big", gpu=gpu, provider=provider, engine=engine, scaling={"replicas": 3}, **spec
    )


def admitted(obj: dict[str, Any], registry: ProviderRegistry) -> ModelDeployment:
    admission = admit(obj, registry=registry)
    assert [str(e) for e in admission.errors] == []
    return ModelDeployment(admission.obj)


def rendered(obj: dict[str, Any], registry: ProviderRegistry) -> list[dict[str, Any]]:
    md = admitted(obj, registry)
    objects: list[dict[str, Any]] = PLUGINS[md.provider_name].render(
        md, PINS, registry.context(md.provider_name)
    )
    return objects


def errors(obj: dict[str, Any], registry: ProviderRegistry) -> list[str]:
    return [str(e) for e in admit(obj, registry=registry).errors]


def leader_container(
    extra: list[str], user: tuple[str, ...] = ("--pipeline-parallel-size", "2")
) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/health", "port": "http"}}
    return {
        "name": "vllm",
        "image": VLLM_IMAGE,
        "args": [
            "--host", "0.0.0.0", "--port", "8000", "--model", "org/model",
            "--enable-prefix-caching", "--tensor-parallel-size", "4", *user, *extra,
        ],
        "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
        "resources": {
            "limits": {"nvidia.com/gpu": "4"},
            "requests": {"nvidia.com/gpu": "4"},
        },
        "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 60},
        "livenessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
        "command": [
            "/bin/sh", "-c", 'ray start --head --port=6379 && exec vllm serve "$@"', "vllm"
        ],
    }  # fmt: skip


WORKER = {
    "name": "ray-worker",
    "image": VLLM_IMAGE,
    "command": ["ray"],
    "args": ["start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"],
    "resources": {"limits": {"nvidia.com/gpu": "4"}, "requests": {"nvidia.com/gpu": "4"}},
    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
}
SHM = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}}


def expected_group(leader: dict[str, Any]) -> list[dict[str, Any]]:
    def template(container: dict[str, Any]) -> dict[str, Any]:
        hardened = {**container, "securityContext": {"allowPrivilegeEscalation": False}}
        return {
            "metadata": {"labels": POD_LABELS},
            "spec": {
                "containers": [hardened],
                "enableServiceLinks": False,
                "volumes": [SHM],
                "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            },
        }

    return [
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": META,
            "spec": {
                "replicas": 3,
                "startupPolicy": "LeaderCreated",
                "networkConfig": {"subdomainPolicy": "UniquePerReplica"},
                "rolloutStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdateConfiguration": {
                        "maxUnavailable": 1,
                        "maxSurge": 0,
                        "partition": 0,
                    },
                },
                "leaderWorkerTemplate": {
                    "size": 2,
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": template(leader),
                    "workerTemplate": template(WORKER),
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": META,
            "spec": {
                "type": "ClusterIP",
                "selector": {**POD_LABELS, **LEADER},
                "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
            },
        },
    ]


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_a_replica_across_nodes_is_a_leaderworkerset_group_and_its_leaders_service(
    shipped: ProviderRegistry, provider: str
) -> None:
    assert rendered(multinode(provider), shipped) == expected_group(
        leader_container(["--distributed-executor-backend", "ray"])
    )


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_one_node_stays_a_deployment(shipped: ProviderRegistry, provider: str) -> None:
    objects = rendered(multinode(provider, nodes="1"), shipped)

    assert [o["kind"] for o in objects] == ["Deployment", "Service"]
    assert objects[1]["spec"]["selector"] == POD_LABELS


def test_a_users_ray_executor_is_passed_once(shipped: ProviderRegistry) -> None:
    obj = multinode("vllm", engine={"args": {"pipeline-parallel-size": "2",
                                             "distributed-executor-backend": "ray"}})  # fmt: skip

    user = ("--distributed-executor-backend", "ray", "--pipeline-parallel-size", "2")  # sorted
    assert rendered(obj, shipped) == expected_group(leader_container([], user))


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_every_pod_of_the_group_gets_the_model_cache(
    shipped: ProviderRegistry, provider: str
) -> None:
    volume = {"name": "cache", "size": "100Gi", "mountPath": "/models", "purpose": "modelCache"}
    obj = multinode(provider, model={"id": "org/model", "storage": {"volumes": [volume]}})

    lws, _, claim = rendered(obj, shipped)
    templates = lws["spec"]["leaderWorkerTemplate"]
    pods = [templates["leaderTemplate"]["spec"], templates["workerTemplate"]["spec"]]

    assert [p["volumes"] for p in pods] == [
        [{"name": "cache", "persistentVolumeClaim": {"claimName": "big-cache"}}, SHM]
    ] * 2
    assert [(c["volumeMounts"], c["env"]) for p in pods for c in p["containers"]] == [
        (
            [{"name": "cache", "mountPath": "/models"}, {"name": "shm", "mountPath": "/dev/shm"}],
            [{"name": "HF_HOME", "value": "/models"}],
        )
    ] * 2
    assert (claim["kind"], claim["metadata"]["name"]) == ("PersistentVolumeClaim", "big-cache")


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_the_pool_selects_the_leaders_only_and_the_whole_render_is_strict(
    shipped: ProviderRegistry, provider: str
) -> None:
    obj = multinode(provider, gateway={"enabled": True})
    context = RenderContext(
        shipped,
        Schemas.from_pack(load_pack()),
        PINS,
        GatewayTarget("inference", "gateways"),
    )

    result = render_one(obj, previous=None, context=context)

    assert result.error is None
    (pool,) = [
        yaml.safe_load(text)
        for name, text in result.files.items()
        if name.startswith("inferencepool-")
    ]
    assert pool["spec"]["selector"] == {
        "matchLabels": {"airunway.ai/model-deployment": "big", **LEADER}
    }


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_the_pool_selector_is_the_leaders(shipped: ProviderRegistry, provider: str) -> None:
    md = admitted(multinode(provider, gateway={"enabled": True}), shipped)

    assert PLUGINS[provider].pods.selector(md) == {"airunway.ai/model-deployment": "big", **LEADER}


@pytest.mark.parametrize(
    ("provider", "spec", "expected"),
    [
        (
            "vllm",
            {"engine": {"args": {"pipeline-parallel-size": "2",
                                 "distributed-executor-backend": "mp"}}},
            [
                "spec.engine.args.distributed-executor-backend: Unsupported value: mp cannot "
                "span nodes here: a replica across 2 nodes runs vLLM's multi-node recipe on Ray "
                "(examples/online_serving/multi-node-serving.sh); leave it out or set ray"
            ],
        ),
        (
            "llmd",
            {"provider": {"name": "llmd", "overrides": {"spec": {"minReadySeconds": 5}}}},
            [
                "spec.provider.overrides.spec: Unsupported value: a replica across 2 nodes "
                "(pipeline-parallel-size) is a LeaderWorkerSet group, not a Deployment: the "
                "Deployment overrides do not apply"
            ],
        ),
    ],
)  # fmt: skip
def test_what_a_group_cannot_honour_is_refused(
    shipped: ProviderRegistry, provider: str, spec: dict[str, Any], expected: list[str]
) -> None:
    obj = multinode(provider)
    for key, value in spec.items():
        obj["spec"][key] = {**obj["spec"].get(key, {}), **value}

    assert errors(obj, shipped) == expected


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("ReadWriteOnce", ["spec.model.storage.volumes[0].accessMode: Unsupported value: "
                           "ReadWriteOnce lets one node mount the claim, but every pod of a "
                           "replica across 2 nodes mounts it: use ReadWriteMany (the default) "
                           "or ReadOnlyMany"]),
        ("ReadWriteOncePod", ["spec.model.storage.volumes[0].accessMode: Unsupported value: "
                              "ReadWriteOncePod lets one pod mount the claim, but every pod of a "
                              "replica across 2 nodes mounts it: use ReadWriteMany (the default) "
                              "or ReadOnlyMany"]),
        ("ReadWriteMany", []),
    ],
)  # fmt: skip
def test_a_model_cache_one_node_may_mount_is_refused_across_nodes(
    shipped: ProviderRegistry, mode: str, expected: list[str]
) -> None:
    volume = {"name": "cache", "size": "100Gi", "purpose": "modelCache", "accessMode": mode}
    obj = multinode("vllm", model={"id": "org/model", "storage": {"volumes": [volume]}})
    one_node = multinode(
        "vllm", nodes="1", model={"id": "org/model", "storage": {"volumes": [volume]}}
    )

    assert (errors(obj, shipped), errors(one_node, shipped)) == (expected, [])


def test_the_same_overrides_on_one_node_are_admitted(shipped: ProviderRegistry) -> None:
    obj = multinode("llmd", nodes="1")
    obj["spec"]["provider"]["overrides"] = {"spec": {"minReadySeconds": 5}}

    assert errors(obj, shipped) == []


def test_llmd_disaggregated_across_nodes_is_refused_with_the_reason(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        "big",
        provider="llmd",
        engine={"type": "vllm", "args": {"pipeline-parallel-size": "2"}},
        mode="disaggregated",
        scaling={"prefill": {"replicas": 1, "gpu": {"count": 2}},
                 "decode": {"replicas": 1, "gpu": {"count": 2}}},
    )  # fmt: skip

    assert errors(obj, shipped) == [
        "spec.engine.args.pipeline-parallel-size: Unsupported value: llm-d places a replica "
        "across nodes for aggregated serving only: a disaggregated decode pod pairs its routing "
        "sidecar and NIXL side channel with one vLLM in the pod (llm-d-inference-scheduler "
        "cmd/pd-sidecar), and llm-d's own multi-node P/D (guides/wide-ep-lws) runs data and "
        "expert parallel ranks, not pipeline stages; use spec.serving.mode aggregated, or "
        "tensor parallel on one node"
    ]


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_both_providers_offer_multinode(provider: str) -> None:
    assert PLUGINS[provider].multinode.offered is True


def test_the_status_controller_watches_leaderworkersets() -> None:
    assert ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet") in [
        tuple(k) for k in upstream_kinds()
    ]


def group_problems(shipped: ProviderRegistry, provider: str, change: Any) -> list[str]:
    obj = multinode(provider, gateway={"enabled": True})
    md = admitted(obj, shipped)
    context = RenderContext(
        shipped, Schemas.from_pack(load_pack()), PINS, GatewayTarget("inference", "gateways")
    )
    result = render_one(obj, previous=None, context=context)
    objects = [
        yaml.safe_load(text)
        for name, text in sorted(result.files.items())
        if name not in ("modeldeployment.yaml", "kustomization.yaml")
    ]
    assert check_invariants(md, objects, shipped) == []
    change(objects)
    return check_invariants(md, objects, shipped)


def _lws(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    return lws


def _pool(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (pool,) = [o for o in objects if o["kind"] == "InferencePool"]
    return pool


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_invariant_gpus_per_pod_times_group_size_is_tp_times_pp(
    shipped: ProviderRegistry, provider: str
) -> None:
    def three_nodes(objects: list[dict[str, Any]]) -> None:
        _lws(objects)["spec"]["leaderWorkerTemplate"]["size"] = 3

    assert group_problems(shipped, provider, three_nodes) == [
        "LeaderWorkerSet/big spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]"
        ".resources.limits requests 4 GPUs on each of 3 pods but LeaderWorkerSet/big "
        "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].args run tensor parallel "
        "4 x pipeline parallel 2 = 8"
    ]


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_invariant_the_pool_selects_the_groups_leaders(
    shipped: ProviderRegistry, provider: str
) -> None:
    def workers_too(objects: list[dict[str, Any]]) -> None:
        _pool(objects)["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] = "x"

    assert group_problems(shipped, provider, workers_too) == [
        "InferencePool/big spec.selector.matchLabels does not match LeaderWorkerSet/big "
        "spec.leaderWorkerTemplate.leaderTemplate.metadata.labels (and "
        "leaderworkerset.sigs.k8s.io/worker-index: 0, the LWS controller's): "
        "app.kubernetes.io/component differ"
    ]


LWS = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}


def lws_state(spec: dict[str, Any], status: dict[str, Any], generation: int = 2) -> Any:
    obj = {**LWS, "metadata": {"name": "big", "generation": generation}, "spec": spec}
    if status:
        obj["status"] = status
    return leaderworkerset_workload(copy.deepcopy(obj), "LeaderWorkerSet/big")


AVAILABLE = [{"type": "Available", "status": "True"}]


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        ({"replicas": 3}, {},
         ("Deploying", "RolloutPending", "LeaderWorkerSet/big: the rollout has not started", 3, 0)),
        ({"replicas": 3}, {"observedGeneration": 2, "readyReplicas": 1, "updatedReplicas": 3},
         ("Deploying", "LeaderWorkerSetInProgress",
          "LeaderWorkerSet/big: 1 of 3 groups ready, 3 updated", 3, 1)),
        ({"replicas": 3}, {"observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 3,
                           "conditions": AVAILABLE},
         ("Running", "LeaderWorkerSetReady", "LeaderWorkerSet/big: all 3 groups are ready", 3, 3)),
        ({"replicas": 3}, {"observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 2,
                           "conditions": AVAILABLE},
         ("Deploying", "LeaderWorkerSetInProgress",
          "LeaderWorkerSet/big: 3 of 3 groups ready, 2 updated", 3, 3)),
        ({"replicas": 0}, {"observedGeneration": 2},
         ("Pending", "ScaledToZero", "LeaderWorkerSet/big wants 0 replicas", 0, 0)),
    ],
)  # fmt: skip
def test_a_leaderworkerset_reads_by_its_own_status(
    spec: dict[str, Any], status: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    state = lws_state(spec, status)

    assert (state.phase, state.reason, state.message, state.desired, state.ready) == expected


def test_a_missing_leaderworkerset_is_not_created() -> None:
    state = leaderworkerset_workload(None, "LeaderWorkerSet/big")

    assert (state.phase, state.reason, state.message, state.created) == (
        "Pending",
        "NotCreated",
        "LeaderWorkerSet/big does not exist yet",
        False,
    )


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
def test_the_model_status_reads_the_leaderworkerset(
    shipped: ProviderRegistry, provider: str
) -> None:
    md = admitted(multinode(provider), shipped)
    lws = {
        **LWS,
        "metadata": {"name": "big", "generation": 1},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 3,
                   "conditions": AVAILABLE},
    }  # fmt: skip

    state = PLUGINS[provider].watched.workload_status(md, {"LeaderWorkerSet/big": lws})

    assert (state.phase, state.desired, state.ready, state.service, state.port) == (
        "Running",
        3,
        3,
        "big",
        8000,
    )
