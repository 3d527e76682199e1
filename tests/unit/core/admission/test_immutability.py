"""UPDATE: identity fields and managed volumes cannot change in place."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.admission.hydrate import hydrate
from core.admission.validation import Operation, check_spec
from core.fields.errors import Reason
from core.selection.configs import ProviderRegistry
from tests.support.builders import model_deployment

RECREATE = "changing it requires deleting and recreating the ModelDeployment"


def update(
    old: dict[str, Any], new: dict[str, Any], registry: ProviderRegistry
) -> list[tuple[str, Reason, str]]:
    stored = hydrate(old, registry=registry).obj
    incoming = hydrate(new, old=stored, registry=registry)
    assert incoming.errors == ()
    verdict = check_spec(incoming.obj, old=stored, operation=Operation.UPDATE, registry=registry)
    return [(e.path, e.reason, e.detail) for e in verdict.errors]


def test_unchanged_update_is_allowed(shipped: ProviderRegistry) -> None:
    assert (
        update(
            model_deployment(gpu=2),
            model_deployment(gpu=2, env=[{"name": "A", "value": "1"}]),
            shipped,
        )
        == []
    )


@pytest.mark.parametrize(
    ("old", "new", "path", "before", "after"),
    [
        (
            model_deployment(gpu=1),
            model_deployment(gpu=1, model_id="org/other"),
            "spec.model.id",
            "org/model",
            "org/other",
        ),
        (
            model_deployment(gpu=1),
            model_deployment(gpu=1, model={"id": "org/model", "source": "custom"}),
            "spec.model.source",
            "huggingface",
            "custom",
        ),
        (
            model_deployment(gpu=1, engine="vllm"),
            model_deployment(gpu=1, engine="sglang"),
            "spec.engine.type",
            "vllm",
            "sglang",
        ),
        (
            model_deployment(gpu=1),
            model_deployment(gpu=1, provider="kuberay"),
            "spec.provider.name",
            "dynamo",
            "kuberay",
        ),
    ],
    ids=["model-id", "model-source", "engine-type", "provider-change-after-auto-selection"],
)
def test_identity_fields_are_immutable(
    old: dict[str, Any],
    new: dict[str, Any],
    path: str,
    before: str,
    after: str,
    shipped: ProviderRegistry,
) -> None:
    assert update(old, new, shipped) == [
        (path, Reason.IMMUTABLE, f'is immutable (was "{before}", now "{after}"); {RECREATE}')
    ]


def test_serving_mode_is_immutable(shipped: ProviderRegistry) -> None:
    old = model_deployment(engine="vllm", provider="dynamo", gpu=1)
    new = model_deployment(
        engine="vllm",
        provider="dynamo",
        mode="disaggregated",
        scaling={"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
    )

    assert update(old, new, shipped) == [
        (
            "spec.serving.mode",
            Reason.IMMUTABLE,
            f'is immutable (was "aggregated", now "disaggregated"); {RECREATE}',
        )
    ]


def test_omitting_the_stamped_engine_and_provider_is_not_a_change(
    shipped: ProviderRegistry,
) -> None:
    assert update(model_deployment(gpu=1), model_deployment(gpu=1), shipped) == []


def test_first_explicit_value_equal_to_the_stamped_one_is_not_a_change(
    shipped: ProviderRegistry,
) -> None:
    assert (
        update(
            model_deployment(gpu=1),
            model_deployment(gpu=1, engine="vllm", provider="dynamo"),
            shipped,
        )
        == []
    )


def test_provider_recorded_only_in_ai_runway_status_cannot_be_switched(
    shipped: ProviderRegistry,
) -> None:
    stored = model_deployment(gpu=1, engine="vllm")
    stored["status"] = {"provider": {"name": "llmd"}}
    new = hydrate(
        model_deployment(gpu=1, engine="vllm", provider="kuberay"), old=stored, registry=shipped
    )

    verdict = check_spec(new.obj, old=stored, operation=Operation.UPDATE, registry=shipped)

    assert [(e.path, e.reason) for e in verdict.errors] == [
        ("spec.provider.name", Reason.IMMUTABLE)
    ]


MANAGED = {"name": "cache", "purpose": "modelCache", "size": "100Gi"}


def with_volumes(*volumes: dict[str, Any]) -> dict[str, Any]:
    return model_deployment(
        "llama",
        gpu=1,
        model={"id": "x", "storage": {"volumes": [copy.deepcopy(v) for v in volumes]}},
    )


def test_managed_volume_cannot_be_removed(shipped: ProviderRegistry) -> None:
    assert update(with_volumes(MANAGED), with_volumes(), shipped) == [
        (
            "spec.model.storage.volumes",
            Reason.FORBIDDEN,
            'managed volume "cache" cannot be removed (it owns a claim); delete the ModelDeployment to remove managed storage',
        )
    ]


def test_managed_volume_cannot_change(shipped: ProviderRegistry) -> None:
    assert update(with_volumes(MANAGED), with_volumes(MANAGED | {"size": "200Gi"}), shipped) == [
        (
            "spec.model.storage.volumes[0]",
            Reason.IMMUTABLE,
            "a managed volume is immutable once created; delete and recreate the ModelDeployment to change it",
        )
    ]


def test_storage_class_unset_and_empty_are_different(shipped: ProviderRegistry) -> None:
    changed = update(
        with_volumes(MANAGED), with_volumes(MANAGED | {"storageClassName": ""}), shipped
    )

    assert [path for path, _, _ in changed] == ["spec.model.storage.volumes[0]"]


def test_equal_sizes_in_other_units_are_no_change(shipped: ProviderRegistry) -> None:
    assert (
        update(with_volumes(MANAGED), with_volumes(MANAGED | {"size": "102400Mi"}), shipped) == []
    )


def test_unmanaged_volumes_may_change_and_new_ones_may_be_added(shipped: ProviderRegistry) -> None:
    existing = {"name": "data", "claimName": "a", "mountPath": "/data"}
    new = with_volumes(
        MANAGED,
        existing | {"claimName": "b"},
        {"name": "more", "claimName": "c", "mountPath": "/c"},
    )

    assert update(with_volumes(MANAGED, existing), new, shipped) == []
