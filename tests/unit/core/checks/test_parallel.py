"""Pipeline parallelism (spec.engine.args.pipeline-parallel-size): the core's rules, the flag
it no longer owns in spec.engine.args, and the GPU invariant across the pods of a replica."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.checks.parallel import check_pipeline_parallel
from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment, positive_whole
from core.model.plugin import MultiNode, Provider
from core.rendering.invariants import check_invariants
from kubeio.registry import build_registry
from providers.modules import plugins
from tests.support.builders import model_deployment

AT = "spec.engine.args[pipeline-parallel-size]"
SHIPPED = build_registry()
VLLM = {plugin.name: plugin for plugin in plugins()}["vllm"]
ONE_NODE = dataclasses.replace(VLLM, multinode=MultiNode(why_not="it renders one Deployment"))
ACROSS = dataclasses.replace(VLLM, multinode=MultiNode(offered=True))


def md(pp: Any, gpu: int | None = 4) -> ModelDeployment:
    args = {"pipeline-parallel-size": pp}
    return ModelDeployment(model_deployment(gpu=gpu, engine={"type": "vllm", "args": args}))


def test_a_provider_that_places_across_nodes_admits_it() -> None:
    assert check_pipeline_parallel(md("2"), ACROSS) == []
    assert md("2").pipeline_parallel == 2
    assert md(3).pipeline_parallel == 3


def test_a_provider_that_does_not_refuses_it_with_its_own_reason() -> None:
    assert check_pipeline_parallel(md("2"), ONE_NODE) == [
        FieldError(
            AT,
            Reason.FORBIDDEN,
            "provider vllm cannot run a replica across 2 nodes: it renders one Deployment",
        )
    ]


def test_one_node_is_always_admitted() -> None:
    assert check_pipeline_parallel(md("1"), ONE_NODE) == []
    assert check_pipeline_parallel(md("1", gpu=None), ONE_NODE) == []


@pytest.mark.parametrize("value", ["0", "-1", "2.0", "two", "", True, 0, -3, 1.5, "٢", None])
def test_only_a_positive_whole_number_is_a_size(value: Any) -> None:
    detail = (
        "must be a positive whole number: the nodes one replica spans, each running tensor "
        "parallel over spec.resources.gpu.count GPUs"
    )
    assert check_pipeline_parallel(md(value), ACROSS) == [FieldError(AT, Reason.INVALID, detail)]
    assert md(value).pipeline_parallel == 1


def test_more_than_one_node_needs_gpus() -> None:
    detail = (
        "a replica across 2 nodes needs GPUs on each: set spec.resources.gpu.count "
        "(pipeline parallelism splits the model's layers over GPUs, not CPUs)"
    )
    assert check_pipeline_parallel(md("2", gpu=None), ACROSS) == [
        FieldError(AT, Reason.INVALID, detail)
    ]


@given(st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.floats()))
def test_any_value_is_a_size_or_refused_never_a_crash(value: Any) -> None:
    errors = check_pipeline_parallel(md(value), ACROSS)
    size = positive_whole(value)
    assert (errors == []) == (size is not None)
    assert all(e.path == AT for e in errors)


def errors_of(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.path, e.reason, e.detail) for e in admit(obj, registry=SHIPPED).errors]


def test_the_flag_in_extra_args_is_owned_and_names_the_args_key() -> None:
    engine = {"type": "vllm", "extraArgs": ["--pipeline-parallel-size", "2"]}
    obj = model_deployment(gpu=2, provider="vllm", engine=engine)

    assert errors_of(obj) == [
        (
            "spec.engine.extraArgs[0]",
            Reason.FORBIDDEN,
            "--pipeline-parallel-size: set spec.engine.args.pipeline-parallel-size (the nodes "
            "one replica spans, where the provider places a replica across nodes); Runway "
            "writes the flag itself",
        )
    ]


def test_the_args_key_is_not_refused_as_an_owned_flag() -> None:
    engine = {"type": "vllm", "args": {"pipeline-parallel-size": "1"}}
    assert errors_of(model_deployment(gpu=2, provider="vllm", engine=engine)) == []


def deployment(gpus: int, args: list[str]) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "args": args,
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m"},
        "spec": {"template": {"metadata": {"labels": {}}, "spec": {"containers": [container]}}},
    }


def test_tensor_times_pipeline_parallel_must_match_the_gpus_of_one_pod_on_one_node() -> None:
    model = md("2")
    objects = [deployment(4, ["--tensor-parallel-size", "4", "--pipeline-parallel-size", "2"])]
    problems = [p for p in check_invariants(model, objects, SHIPPED) if "GPUs" in p]

    assert problems == [
        "Deployment/m spec.template.spec.containers[0].resources.limits requests 4 GPUs but "
        "Deployment/m spec.template.spec.containers[0].args run tensor parallel 4 x pipeline "
        "parallel 2 = 8"
    ]


def test_the_multinode_role_defaults_to_refusing_with_a_reason() -> None:
    assert Provider.__dataclass_fields__["multinode"].default == MultiNode(
        offered=False, why_not="the provider places every replica on one node"
    )
