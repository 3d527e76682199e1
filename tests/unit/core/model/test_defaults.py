"""Defaulting: the CRD defaults plus AI Runway's admission defaults, on a copy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.model.defaults import with_defaults
from tests.support.builders import model_deployment


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = with_defaults(obj)["spec"]
    return result


def test_minimal_object_gets_every_default() -> None:
    assert spec_of(model_deployment()) == {
        "model": {"id": "org/model", "source": "huggingface"},
        "serving": {"mode": "aggregated"},
        "scaling": {"replicas": 1},
        "engine": {"enablePrefixCaching": True, "enforceEager": False, "trustRemoteCode": False},
    }


def test_explicit_values_survive_defaulting() -> None:
    obj = model_deployment(
        engine="vllm",
        gpu=0,
        model={"id": "x", "source": "custom"},
        scaling={"replicas": 0},
    )
    obj["spec"]["engine"].update(enablePrefixCaching=False, trustRemoteCode=True)

    spec = spec_of(obj)

    assert spec["model"] == {"id": "x", "source": "custom"}
    assert spec["scaling"] == {"replicas": 0}
    assert spec["resources"] == {"gpu": {"count": 0, "type": "nvidia.com/gpu"}}
    assert spec["engine"] == {
        "type": "vllm",
        "enablePrefixCaching": False,
        "enforceEager": False,
        "trustRemoteCode": True,
    }


@pytest.mark.parametrize(
    ("obj", "resources"),
    [
        (model_deployment(engine="vllm"), {"gpu": {"count": 1, "type": "nvidia.com/gpu"}}),
        (model_deployment(engine="sglang"), {"gpu": {"count": 1, "type": "nvidia.com/gpu"}}),
        (model_deployment(engine="llamacpp"), None),
        (model_deployment(), None),
        (model_deployment(engine="vllm", image="repo/img:1"), None),
        (model_deployment(engine="vllm", resources={"cpu": "2"}), {"cpu": "2"}),
        (model_deployment(engine="vllm", mode="disaggregated"), None),
    ],
    ids=[
        "vllm",
        "sglang",
        "not-for-llamacpp",
        "not-without-engine",
        "not-with-legacy-image",
        "not-when-resources-set",
        "not-disaggregated",
    ],
)
def test_one_gpu_default_applies_only_when_engine_set_and_resources_absent(
    obj: dict[str, Any], resources: dict[str, Any] | None
) -> None:
    assert spec_of(obj).get("resources") == resources


def test_engine_image_does_not_suppress_the_gpu_default() -> None:
    obj = model_deployment(engine="vllm")
    obj["spec"]["engine"]["image"] = "vllm/vllm-openai:v0.33.0"

    assert spec_of(obj)["resources"] == {"gpu": {"count": 1, "type": "nvidia.com/gpu"}}


def test_gpu_types_and_component_replicas_are_defaulted() -> None:
    obj = model_deployment(
        mode="disaggregated",
        scaling={
            "prefill": {"gpu": {"count": 2}},
            "decode": {"gpu": {"count": 1, "type": "amd.com/gpu"}},
        },
    )

    assert spec_of(obj)["scaling"] == {
        "replicas": 1,
        "prefill": {"replicas": 1, "gpu": {"count": 2, "type": "nvidia.com/gpu"}},
        "decode": {"replicas": 1, "gpu": {"count": 1, "type": "amd.com/gpu"}},
    }


def test_disaggregated_without_scaling_gets_no_scaling() -> None:
    assert "scaling" not in spec_of(model_deployment(mode="disaggregated"))


def test_storage_volumes_get_purpose_mount_path_claim_and_access_mode() -> None:
    volumes = [
        {"name": "cache", "purpose": "modelCache", "size": "100Gi"},
        {"name": "compile", "purpose": "compilationCache", "claimName": "shared"},
        {"name": "data", "claimName": "data", "mountPath": "/data"},
    ]
    obj = model_deployment("llama", model={"id": "x", "storage": {"volumes": volumes}})

    assert spec_of(obj)["model"]["storage"]["volumes"] == [
        {
            "name": "cache",
            "purpose": "modelCache",
            "size": "100Gi",
            "readOnly": False,
            "mountPath": "/model-cache",
            "claimName": "llama-cache",
            "accessMode": "ReadWriteMany",
        },
        {
            "name": "compile",
            "purpose": "compilationCache",
            "claimName": "shared",
            "readOnly": False,
            "mountPath": "/compilation-cache",
        },
        {
            "name": "data",
            "claimName": "data",
            "mountPath": "/data",
            "purpose": "custom",
            "readOnly": False,
        },
    ]


def test_defaulting_never_changes_its_argument() -> None:
    obj = model_deployment(
        engine="vllm", model={"id": "x", "storage": {"volumes": [{"name": "v", "size": "1Gi"}]}}
    )
    before = copy.deepcopy(obj)

    with_defaults(obj)

    assert obj == before
