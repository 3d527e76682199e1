"""Dynamo, issue #43: a replica across nodes (multinode), the Frontend's and the picker's own
sizing, the picker's env, the service names per engine, and TRT-LLM disaggregated serving.
Each upstream fact the rules rest on is cited in providers/dynamo and docs/checks.md."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.admission.pipeline import admit
from core.fields.errors import Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment
from core.rendering.invariants import check_invariants
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from providers.dynamo import PROVIDER as DYNAMO
from tests.support.builders import disaggregated, model_deployment

PINS = bundled_versions()
AT = FieldPath.root("spec", "provider", "overrides")
TAG = PINS.pin("dynamo")
EVENTS = '{"enable_kv_cache_events": true, "endpoint": "tcp://*:5557", "publisher": "zmq", "topic": "kv-events"}'


def admitted(obj: dict[str, Any], registry: ProviderRegistry) -> ModelDeployment:
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    return ModelDeployment(admission.obj)


def graph_of(md: ModelDeployment, registry: ProviderRegistry) -> dict[str, Any]:
    graph: dict[str, Any] = DYNAMO.render(md, PINS, registry.context("dynamo"))[0]
    return graph


def errors_of(obj: dict[str, Any], registry: ProviderRegistry) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in admit(obj, registry=registry).errors]


def multinode(engine: str, **spec: Any) -> dict[str, Any]:
    return model_deployment(
        "big",
        gpu=8,
        provider="dynamo",
        engine={"type": engine, "args": {"pipeline-parallel-size": "2"}},
        **spec,
    )


# -- multi-node (issue #43 row 1) -----------------------------------------------------------


def test_a_replica_across_two_nodes_is_a_multinode_worker_with_tp_per_node_and_pp(
    shipped: ProviderRegistry,
) -> None:
    md = admitted(multinode("vllm"), shipped)

    graph = graph_of(md, shipped)

    assert graph["spec"]["services"]["VllmWorker"] == {
        "componentType": "worker",
        "replicas": 1,
        "resources": {"limits": {"gpu": "8"}, "requests": {"gpu": "8"}},
        "extraPodSpec": {
            "mainContainer": {
                "image": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{TAG}",
                "command": ["python3", "-m", "dynamo.vllm"],
                "args": [
                    "--model",
                    "org/model",
                    "--served-model-name",
                    "org/model",
                    "--enable-prefix-caching",
                    "--tensor-parallel-size",
                    "8",
                    "--pipeline-parallel-size",
                    "2",
                ],
                "securityContext": {"allowPrivilegeEscalation": False},
            },
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        },
        "multinode": {"nodeCount": 2},
    }
    assert check_invariants(md, [graph], shipped) == []


@pytest.mark.parametrize(
    ("engine", "tp"), [("sglang", "--tp-size"), ("trtllm", "--tensor-parallel-size")]
)
def test_every_engine_runs_multinode_with_its_own_tensor_parallel_flag(
    engine: str, tp: str, shipped: ProviderRegistry
) -> None:
    md = admitted(multinode(engine), shipped)

    ((name, worker),) = [
        (k, s) for k, s in graph_of(md, shipped)["spec"]["services"].items() if k != "Frontend"
    ]
    args = worker["extraPodSpec"]["mainContainer"]["args"]

    assert (name, worker["multinode"], args[args.index(tp) + 1]) == (
        {"sglang": "decode", "trtllm": "TRTLLMWorker"}[engine],
        {"nodeCount": 2},
        "8",
    )
    assert args[-2:] == ["--pipeline-parallel-size", "2"]


def test_each_disaggregated_role_spans_the_nodes_with_its_own_gpus(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("pd", prefill_gpu=4, decode_gpu=8)
    obj["spec"]["provider"] = {"name": "dynamo"}
    obj["spec"]["engine"] = {"type": "vllm", "args": {"pipeline-parallel-size": "2"}}
    md = admitted(obj, shipped)

    graph = graph_of(md, shipped)

    assert {
        name: (s["multinode"], s["resources"]["limits"]["gpu"])
        for name, s in graph["spec"]["services"].items()
        if s["componentType"] == "worker"
    } == {
        "VllmPrefillWorker": ({"nodeCount": 2}, "4"),
        "VllmDecodeWorker": ({"nodeCount": 2}, "8"),
    }
    assert check_invariants(md, [graph], shipped) == []


def test_the_gpu_invariant_counts_the_nodes_of_a_multinode_worker(
    shipped: ProviderRegistry,
) -> None:
    md = admitted(multinode("vllm"), shipped)
    graph = graph_of(md, shipped)
    graph["spec"]["services"]["VllmWorker"]["multinode"]["nodeCount"] = 3

    assert check_invariants(md, [graph], shipped) == [
        "DynamoGraphDeployment/big spec.services.VllmWorker.resources.limits.gpu requests 8 GPUs "
        "on each of 3 pods but DynamoGraphDeployment/big "
        "spec.services.VllmWorker.extraPodSpec.mainContainer.args run tensor parallel 8 x "
        "pipeline parallel 2 = 16"
    ]


NODE_COUNT = (
    "must equal spec.engine.args.pipeline-parallel-size ({}): Runway renders each replica "
    "across that many nodes with tensor parallel = spec.resources.gpu.count on each, and the "
    "Dynamo operator launches across nodes only when tensor x pipeline parallel exceeds one "
    "pod's GPUs (deploy/operator/internal/dynamo/backend_vllm.go "
    "needsTensorParallelMultinodeLaunch); set pipeline-parallel-size to the nodes you want "
    "instead"
)


def test_a_node_count_in_overrides_that_disagrees_with_pipeline_parallel_is_refused(
    shipped: ProviderRegistry,
) -> None:
    """The issue's row 1: nodeCount 2 in overrides, no pipeline parallelism, was merged and left
    16 GPUs and tensor parallel 16 on each of two pods."""
    obj = model_deployment(
        "big",
        gpu=16,
        provider="dynamo",
        engine="vllm",
        overrides={"spec": {"services": {"VllmWorker": {"multinode": {"nodeCount": 2}}}}},
    )

    assert errors_of(obj, shipped) == [
        (
            "spec.provider.overrides.spec.services[VllmWorker].multinode.nodeCount",
            Reason.INVALID,
            NODE_COUNT.format("1, absent"),
        )
    ]


def test_a_node_count_in_overrides_must_sit_on_a_worker_and_agree(
    shipped: ProviderRegistry,
) -> None:
    services = {
        "decode": {"multinode": {"nodeCount": 3}},
        "Frontend": {"multinode": {"nodeCount": 2}},
    }
    obj = multinode("sglang", **{})
    obj["spec"]["provider"]["overrides"] = {"spec": {"services": services}}

    assert errors_of(obj, shipped) == [
        (
            "spec.provider.overrides.spec.services[decode].multinode.nodeCount",
            Reason.INVALID,
            NODE_COUNT.format("2"),
        ),
        (
            "spec.provider.overrides.spec.services[Frontend].multinode",
            Reason.FORBIDDEN,
            "Frontend is not a worker service Runway renders for this model (decode): multinode "
            "places a worker's replicas across nodes; set spec.engine.args.pipeline-parallel-size "
            "instead",
        ),
    ]


def test_an_agreeing_node_count_is_admitted_with_the_placement_warning(
    shipped: ProviderRegistry,
) -> None:
    obj = multinode("vllm")
    obj["spec"]["provider"]["overrides"] = {
        "spec": {"services": {"VllmWorker": {"multinode": {"nodeCount": 2}}}}
    }

    admission = admit(obj, registry=shipped)

    assert (admission.errors, admission.warnings) == (
        (),
        (
            "spec.engine.args.pipeline-parallel-size: each replica spans 2 nodes: the Dynamo "
            "operator places a multinode service through Grove or LeaderWorkerSet, which the "
            "dynamo-platform chart must have enabled (its defaults leave both off)",
        ),
    )


def test_the_mocker_places_no_replica_across_nodes(shipped: ProviderRegistry) -> None:
    obj = multinode("vllm", annotations={"airunway.ai/dynamo-test-backend": "mocker"})

    assert errors_of(obj, shipped) == [
        (
            "spec.engine.args[pipeline-parallel-size]",
            Reason.FORBIDDEN,
            "the dynamo mocker test backend simulates each worker in one pod with no GPUs, so "
            "it places no replica across nodes",
        )
    ]


# -- the Frontend's and the picker's own sizing (row 6) --------------------------------------


def test_frontend_sizing_renders_into_the_frontend_service(shipped: ProviderRegistry) -> None:
    overrides = {"frontend": {"replicas": 3, "resources": {"cpu": "6"}}, "routerMode": "kv"}
    obj = model_deployment(gpu=1, provider="dynamo", engine="sglang", overrides=overrides)
    md = admitted(obj, shipped)  # the global sizing rule leaves the Frontend's own keys alone

    assert graph_of(md, shipped)["spec"]["services"]["Frontend"] == {
        "componentType": "frontend",
        "replicas": 3,
        "resources": {"requests": {"cpu": "6", "memory": "4Gi"}},
        "extraPodSpec": {
            "mainContainer": {
                "image": f"nvcr.io/nvidia/ai-dynamo/sglang-runtime:{TAG}",
                "securityContext": {"allowPrivilegeEscalation": False},
            },
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        },
        "envs": [{"name": "DYN_ROUTER_MODE", "value": "kv"}],
    }


def test_epp_replicas_render_into_the_picker(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        gateway={"enabled": True},
        overrides={"epp": {"replicas": 2}},
    )
    md = admitted(obj, shipped)

    assert graph_of(md, shipped)["spec"]["services"]["Epp"]["replicas"] == 2


def test_sizing_keys_deeper_under_the_sized_roots_are_still_refused(
    shipped: ProviderRegistry,
) -> None:
    overrides = {"frontend": {"resources": {"replicas": 2}}}
    obj = model_deployment(gpu=1, provider="dynamo", engine="vllm", overrides=overrides)

    assert errors_of(obj, shipped) == [
        (
            "spec.provider.overrides.frontend.resources.replicas",
            Reason.FORBIDDEN,
            '"replicas" may not be set through overrides: it would bypass the admission limits; '
            "use spec.scaling and spec.resources instead",
        )
    ]


def test_frontend_and_epp_sizing_are_typed_and_bounded() -> None:
    overrides = {
        "frontend": {"replicas": 0, "resources": {"cpu": "lots", "memory": "5Ti"}},
        "epp": {"replicas": 33},
    }

    assert [(e.path, e.reason, e.detail) for e in DYNAMO.overrides.check(overrides, AT)] == [
        ("spec.provider.overrides.frontend.replicas", Reason.INVALID, "must be >= 1"),
        ("spec.provider.overrides.epp.replicas", Reason.INVALID, "must be <= 32"),
        (
            "spec.provider.overrides.frontend.resources.cpu",
            Reason.INVALID,
            "not a valid resource quantity (such as 4, 500m, 32Gi)",
        ),
        (
            "spec.provider.overrides.frontend.resources.memory",
            Reason.INVALID,
            "exceeds the maximum allowed (4Ti)",
        ),
    ]
    assert DYNAMO.overrides.sized == frozenset({"frontend", "epp"})


def test_frontend_sizing_behind_a_gateway_and_epp_without_one_are_refused(
    shipped: ProviderRegistry,
) -> None:
    """Behind a gateway there is no standalone Frontend; without one there is no picker: either
    key where its service does not run would be dropped without a word."""
    gateway = model_deployment(
        gpu=1,
        provider="dynamo",
        engine="vllm",
        gateway={"enabled": True},
        overrides={"frontend": {}},
    )
    plain = model_deployment(
        gpu=1, provider="dynamo", engine="vllm", overrides={"epp": {"image": "r/epp:1"}}
    )

    assert errors_of(gateway, shipped) == [
        (
            "spec.provider.overrides.frontend",
            Reason.FORBIDDEN,
            "behind a gateway Dynamo runs no standalone Frontend (each worker serves through its "
            "own frontend sidecar, chosen by the endpoint picker), so frontend sizes nothing: "
            "remove it, or size the picker with epp.replicas",
        )
    ]
    assert errors_of(plain, shipped) == [
        (
            "spec.provider.overrides.epp",
            Reason.FORBIDDEN,
            "Dynamo's endpoint picker (the Epp service) runs only behind a gateway "
            "(spec.gateway.enabled: true, and not with the mocker test backend); without one the "
            "standalone Frontend routes: remove epp, or size the Frontend with frontend",
        )
    ]


# -- the picker's env (row 7) and the names (row 10) -----------------------------------------


@pytest.mark.parametrize(
    ("engine", "args", "block", "worker_flag"),
    [
        ("vllm", {}, "16", ["--block-size", "16"]),
        ("vllm", {"block-size": "32"}, "32", ["--block-size", "32"]),
        ("sglang", {}, "16", ["--page-size", "16"]),
        ("trtllm", {}, "32", []),
        ("trtllm", {"kv-block-size": "64"}, "64", ["--kv-block-size", "64"]),
    ],
    ids=["vllm", "vllm-user", "sglang", "trtllm", "trtllm-user"],
)
def test_the_picker_hashes_at_the_block_size_the_workers_run(
    engine: str, args: dict[str, str], block: str, worker_flag: list[str], shipped: ProviderRegistry
) -> None:
    obj = model_deployment(
        gpu=1,
        provider="dynamo",
        engine={"type": engine, "args": args} if args else engine,
        gateway={"enabled": True},
        model={"id": "org/model", "servedName": "served"},
    )
    graph = graph_of(admitted(obj, shipped), shipped)
    services = graph["spec"]["services"]
    (worker,) = [s for k, s in services.items() if k != "Epp"]
    worker_args = worker["extraPodSpec"]["mainContainer"]["args"]
    found = [a for i, a in enumerate(worker_args) if worker_flag and a == worker_flag[0]]

    assert services["Epp"]["envs"] == [
        {"name": "DYN_KV_CACHE_BLOCK_SIZE", "value": block},
        {"name": "DYN_MODEL_NAME", "value": "served"},
        {"name": "DYN_DECODE_FALLBACK", "value": "true"},
        {"name": "DYN_ENFORCE_DISAGG", "value": "false"},
    ]
    assert (
        worker_args[worker_args.index(worker_flag[0]) : worker_args.index(worker_flag[0]) + 2]
        if worker_flag
        else [a for a in worker_args if "block" in a or "page" in a]
    ) == worker_flag
    assert len(found) == (1 if worker_flag else 0)


@pytest.mark.parametrize(
    ("engine", "aggregated", "disaggregated_names"),
    [
        ("vllm", ["Frontend", "VllmWorker"], ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]),
        ("sglang", ["Frontend", "decode"], ["Frontend", "decode", "prefill"]),
        (
            "trtllm",
            ["Frontend", "TRTLLMWorker"],
            ["Frontend", "TRTLLMDecodeWorker", "TRTLLMPrefillWorker"],
        ),
    ],
)
def test_services_are_named_as_dynamo_names_them_per_engine(
    engine: str, aggregated: list[str], disaggregated_names: list[str], shipped: ProviderRegistry
) -> None:
    agg = model_deployment(gpu=1, provider="dynamo", engine=engine)
    split = disaggregated("pd")
    split["spec"]["provider"] = {"name": "dynamo"}
    split["spec"]["engine"] = {"type": engine}

    assert sorted(graph_of(admitted(agg, shipped), shipped)["spec"]["services"]) == aggregated
    assert (
        sorted(graph_of(admitted(split, shipped), shipped)["spec"]["services"])
        == disaggregated_names
    )


def test_the_sglang_frontend_sidecar_runs_the_sglang_runtime(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1, provider="dynamo", engine="sglang", gateway={"enabled": True})

    services = graph_of(admitted(obj, shipped), shipped)["spec"]["services"]

    assert services["decode"]["frontendSidecar"] == {
        "image": f"nvcr.io/nvidia/ai-dynamo/sglang-runtime:{TAG}",
        "args": ["-m", "dynamo.frontend", "--router-mode", "direct"],
    }


# -- TRT-LLM disaggregated serving (item 6) --------------------------------------------------


def test_trtllm_disaggregated_workers_carry_their_role_and_the_kv_cache_transceiver(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("pd")
    obj["spec"]["provider"] = {"name": "dynamo"}
    obj["spec"]["engine"] = {"type": "trtllm"}
    md = admitted(obj, shipped)

    graph = graph_of(md, shipped)
    services = graph["spec"]["services"]

    def args(name: str) -> list[str]:
        return list(services[name]["extraPodSpec"]["mainContainer"]["args"])

    assert args("TRTLLMPrefillWorker") == [
        "--model",
        "org/model",
        "--served-model-name",
        "org/model",
        "--disaggregation-mode",
        "prefill",
        "--override-engine-args",
        '{"cache_transceiver_config": {"backend": "DEFAULT"}, "disable_overlap_scheduler": true}',
    ]
    assert args("TRTLLMDecodeWorker") == [
        "--model",
        "org/model",
        "--served-model-name",
        "org/model",
        "--disaggregation-mode",
        "decode",
        "--override-engine-args",
        '{"cache_transceiver_config": {"backend": "DEFAULT"}}',
    ]
    assert (
        services["TRTLLMPrefillWorker"]["subComponentType"],
        services["TRTLLMDecodeWorker"]["subComponentType"],
    ) == ("prefill", "decode")
    assert check_invariants(md, [graph], shipped) == []


def test_a_trtllm_disaggregated_worker_without_the_transceiver_breaks_an_invariant(
    shipped: ProviderRegistry,
) -> None:
    obj = disaggregated("pd")
    obj["spec"]["provider"] = {"name": "dynamo"}
    obj["spec"]["engine"] = {
        "type": "trtllm",
        "args": {"override-engine-args": '{"max_batch_size": 8}'},
    }
    md = admitted(obj, shipped)

    graph = graph_of(md, shipped)

    at = "DynamoGraphDeployment/pd spec.services.{}.extraPodSpec.mainContainer.args"
    assert check_invariants(md, [graph], shipped) == [
        f"{at.format('TRTLLMDecodeWorker')} --override-engine-args lacks cache_transceiver_config: "
        'a decode TRT-LLM worker needs {"cache_transceiver_config": {"backend": "DEFAULT"}}',
        f"{at.format('TRTLLMPrefillWorker')} --override-engine-args lacks "
        "cache_transceiver_config, disable_overlap_scheduler: a prefill TRT-LLM worker needs "
        '{"cache_transceiver_config": {"backend": "DEFAULT"}, "disable_overlap_scheduler": true}',
    ]
    assert json.loads(
        graph["spec"]["services"]["TRTLLMPrefillWorker"]["extraPodSpec"]["mainContainer"]["args"][
            -1
        ]
    ) == {"max_batch_size": 8}


def test_valid_sizing_passes_layer2_and_the_mocker_keeps_a_sized_frontend(
    shipped: ProviderRegistry,
) -> None:
    sizing = {"replicas": 2, "resources": {"cpu": "500m", "memory": "1Gi"}}
    obj = model_deployment(annotations={"airunway.ai/dynamo-test-backend": "mocker"})
    obj["spec"]["provider"] = {"name": "dynamo"}
    md = admitted(obj, shipped)
    md = ModelDeployment(
        {
            **md.obj,
            "spec": {**md.spec, "provider": {"name": "dynamo", "overrides": {"frontend": sizing}}},
        }
    )

    frontend = graph_of(md, shipped)["spec"]["services"]["Frontend"]

    assert DYNAMO.overrides.check({"frontend": sizing, "epp": {"replicas": 32}}, AT) == []
    assert (frontend["replicas"], frontend["resources"]) == (
        2,
        {"requests": {"cpu": "500m", "memory": "1Gi"}},
    )
