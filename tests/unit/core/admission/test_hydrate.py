"""Hydration: stamping, stickiness, idempotence, structure errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from core.admission.hydrate import STICKY_REASON, hydrate
from core.fields.errors import FieldError, Reason
from core.model.kinds import Choice
from core.selection.configs import ProviderRegistry
from kubeio.yamlio import dump
from tests.support.builders import (
    engine_capability,
    model_deployment,
    provider_config,
    registry_of,
)
from tests.support.paths import example_files, example_name

ENGINE_AUTO_REASON_CPU = (
    "auto-selected: llamacpp is the most preferred engine (vllm > sglang > trtllm > llamacpp) "
    "offered for gpu=false, mode=aggregated by kaito"
)
KAITO_REASON = (
    'auto-selected: rule "!has(spec.resources) || !has(spec.resources.gpu) || '
    'spec.resources.gpu.count == 0" matched at priority 100, the highest priority matched among '
    "kaito (ties break by name)"
)


def example_objects() -> list[tuple[str, dict[str, Any]]]:
    return [
        (example_name(path), doc)
        for path in example_files()
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def test_selection_is_stamped_into_spec_and_annotations(shipped: ProviderRegistry) -> None:
    result = hydrate(model_deployment(), registry=shipped)

    assert result.obj["spec"]["engine"]["type"] == "llamacpp"
    assert result.obj["spec"]["provider"] == {"name": "kaito"}
    assert result.obj["metadata"] == {
        "name": "m",
        "namespace": "ns",
        "annotations": {
            "airunway.ai/engine-selection": "auto",
            "airunway.ai/engine-selected-reason": ENGINE_AUTO_REASON_CPU,
            "airunway.ai/provider-selection": "auto",
            "airunway.ai/provider-selected-reason": KAITO_REASON,
        },
    }
    assert "status" not in result.obj


def test_explicit_choices_are_annotated_as_explicit(shipped: ProviderRegistry) -> None:
    result = hydrate(model_deployment(gpu=1, engine="vllm", provider="vllm"), registry=shipped)

    assert result.obj["metadata"]["annotations"] == {
        "airunway.ai/engine-selection": "explicit",
        "airunway.ai/engine-selected-reason": "set in spec.engine.type",
        "airunway.ai/provider-selection": "explicit",
        "airunway.ai/provider-selected-reason": "set in spec.provider.name",
    }


def test_existing_annotations_are_kept(shipped: ProviderRegistry) -> None:
    obj = model_deployment(annotations={"team": "ml"})

    result = hydrate(obj, registry=shipped)

    assert result.obj["metadata"]["annotations"]["team"] == "ml"


@pytest.mark.parametrize(
    ("name", "obj"), example_objects(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_hydrating_a_hydrated_object_changes_nothing(
    name: str, obj: dict[str, Any], shipped: ProviderRegistry
) -> None:
    first = hydrate(obj, registry=shipped)
    if first.errors:  # rejected at mutation: nothing is stored, so there is nothing to re-admit
        assert name.startswith("rejected/")
        return

    second = hydrate(first.obj, registry=shipped)
    again_as_update = hydrate(first.obj, old=first.obj, registry=shipped)

    assert second.obj == first.obj
    assert again_as_update.obj == first.obj


def plain_json_types(value: Any) -> bool:
    """Only dict, list, str, int, float, bool, None — exactly, not subclasses such as StrEnum."""
    if type(value) is dict:
        return all(type(k) is str and plain_json_types(v) for k, v in value.items())
    if type(value) is list:
        return all(plain_json_types(v) for v in value)
    return type(value) in (str, int, float, bool, type(None))


@pytest.mark.parametrize(
    ("name", "obj"), example_objects(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_hydrated_objects_hold_only_plain_json_types(
    name: str, obj: dict[str, Any], shipped: ProviderRegistry
) -> None:
    hydrated = hydrate(obj, registry=shipped).obj

    assert plain_json_types(hydrated)
    assert yaml.safe_load(dump(hydrated)) == hydrated


def test_hydration_never_changes_its_argument(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=2)
    before = copy.deepcopy(obj)

    hydrate(obj, old=copy.deepcopy(obj), registry=shipped)

    assert obj == before


def test_selection_is_sticky_on_update_even_when_configs_change() -> None:
    before = registry_of(
        provider_config("dynamo", rules=[("true", 50)]),
        provider_config("kuberay", rules=[("true", 10)]),
    )
    after = registry_of(
        provider_config("dynamo", rules=[("true", 50)]),
        provider_config("kuberay", rules=[("true", 99)]),
    )
    stored = hydrate(model_deployment(gpu=2), registry=before).obj
    assert stored["spec"]["provider"]["name"] == "dynamo"

    # The source in Git does not carry the stamped fields; the update must not re-route it.
    result = hydrate(model_deployment(gpu=2), old=stored, registry=after)

    assert result.errors == ()
    assert result.obj["spec"]["provider"]["name"] == "dynamo"
    assert result.obj["metadata"]["annotations"] == stored["metadata"]["annotations"]
    assert result.warnings == ()


def test_sticky_selection_from_an_ai_runway_status_record(shipped: ProviderRegistry) -> None:
    old = model_deployment(gpu=1)
    old["status"] = {"provider": {"name": "llmd"}, "engine": {"type": "vllm"}}

    result = hydrate(model_deployment(gpu=1), old=old, registry=shipped)

    assert result.provider is not None and result.engine is not None
    assert (result.engine.value, result.engine.reason, result.engine.choice) == (
        "vllm",
        STICKY_REASON,
        Choice.AUTO,
    )
    assert (result.provider.value, result.provider.reason) == ("llmd", STICKY_REASON)


def test_auto_engine_without_gpu_records_zero_gpus_so_readmission_adds_none() -> None:
    registry = registry_of(
        provider_config(
            "kuberay", engines=[engine_capability("vllm", cpu=True)], rules=[("true", 1)]
        )
    )

    first = hydrate(model_deployment(), registry=registry)
    second = hydrate(first.obj, old=first.obj, registry=registry)

    assert first.obj["spec"]["resources"] == {"gpu": {"count": 0, "type": "nvidia.com/gpu"}}
    assert second.obj == first.obj


def test_structure_errors_stop_hydration_and_name_every_field(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1)
    obj["spec"]["resources"]["gpu"]["cuont"] = 2
    obj["spec"]["engine"] = {"type": "vllm2"}
    obj["spec"]["scaling"] = {"replicas": "two"}

    result = hydrate(obj, registry=shipped)

    assert result.engine is None and result.provider is None
    assert result.errors == (
        FieldError(
            "spec.resources.gpu.cuont",
            Reason.UNKNOWN_FIELD,
            'not declared in the schema (did you mean "count"?)',
        ),
        FieldError(
            "spec.engine.type",
            Reason.UNSUPPORTED,
            'supported values: "vllm", "sglang", "trtllm", "llamacpp"',
        ),
        FieldError("spec.scaling.replicas", Reason.INVALID, "must be integer, not string"),
    )


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        (
            {"apiVersion": "v1", "kind": "ConfigMap"},
            FieldError(
                "kind",
                Reason.INVALID,
                "expected airunway.ai/v1alpha1 ModelDeployment, got v1 ConfigMap",
            ),
        ),
        (
            {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {}},
            FieldError("spec", Reason.REQUIRED, "required field is missing"),
        ),
        (
            {
                "apiVersion": "airunway.ai/v1alpha1",
                "kind": "ModelDeployment",
                "metadata": {},
                "spec": {},
            },
            FieldError("spec.model", Reason.REQUIRED, "required field is missing"),
        ),
        (
            {
                "apiVersion": "airunway.ai/v1alpha1",
                "kind": "ModelDeployment",
                "metadata": {},
                "spec": [],
            },
            FieldError("spec", Reason.INVALID, "must be object, not array"),
        ),
        (
            {
                "apiVersion": "airunway.ai/v1alpha1",
                "kind": "ModelDeployment",
                "metadata": {"annotations": {"a": 1}},
                "spec": {"model": {}},
            },
            FieldError("metadata.annotations", Reason.INVALID, "must map strings to strings"),
        ),
    ],
    ids=["wrong-kind", "no-spec", "no-model", "spec-not-object", "annotation-not-string"],
)
def test_unusable_objects_are_errors_not_exceptions(
    obj: dict[str, Any], error: FieldError, shipped: ProviderRegistry
) -> None:
    assert hydrate(obj, registry=shipped).errors == (error,)


def test_deeply_nested_input_is_an_error_not_a_crash(shipped: ProviderRegistry) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    obj = model_deployment(provider="dynamo", overrides={"spec": deep})

    result = hydrate(obj, registry=shipped)

    assert result.errors == (FieldError("spec", Reason.INVALID, "nested deeper than 100 levels"),)


def test_every_example_file_takes_part_in_the_idempotence_test() -> None:
    assert len(example_objects()) == len(example_files()) == 19
