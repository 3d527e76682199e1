"""spec.provider.overrides, layer 2: what each provider's check_overrides accepts of what layer 1
(tests/unit/core/checks/test_overrides.py) let through."""

from __future__ import annotations

from typing import Any

import pytest

from core.fields.errors import Reason
from core.fields.paths import FieldPath
from providers.dynamo import PROVIDER as DYNAMO
from providers.kaito import PROVIDER as KAITO
from providers.llmd import PROVIDER as LLMD
from providers.vllm import PROVIDER as VLLM

AT = FieldPath.root("spec", "provider", "overrides")


def layer2(module: Any, overrides: dict[str, Any]) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in module.overrides.check(overrides, AT)]


def test_dynamo_accepts_spec_and_its_transformer_keys() -> None:
    overrides = {"spec": {"envs": []}, "routerMode": "kv", "epp": {"image": "i"}, "frontend": {}}

    assert layer2(DYNAMO, overrides) == []


def test_dynamo_rejects_a_typo_in_its_typed_keys() -> None:
    assert layer2(DYNAMO, {"epp": {"imag": "registry/epp:1"}}) == [
        (
            "spec.provider.overrides.epp.imag",
            Reason.UNKNOWN_FIELD,
            'not declared in the schema (did you mean "image"?)',
        )
    ]


def test_dynamo_decodes_router_mode_and_types_strictly() -> None:
    assert layer2(
        DYNAMO, {"routerMode": "fastest", "frontend": {"resources": {"cpu": 2}}, "spec": []}
    ) == [
        (
            "spec.provider.overrides.routerMode",
            Reason.UNSUPPORTED,
            'supported values: "round-robin", "random", "kv", "direct"',
        ),
        (
            "spec.provider.overrides.frontend.resources.cpu",
            Reason.INVALID,
            "must be string, not integer",
        ),
        ("spec.provider.overrides.spec", Reason.INVALID, "must be object, not array"),
    ]


@pytest.mark.parametrize(
    ("module", "accepted"),
    [
        (DYNAMO, "epp, frontend, routerMode, spec"),
        (KAITO, "inference, resource"),
        (LLMD, "spec"),
        (VLLM, "spec"),
    ],
    ids=["dynamo", "kaito", "llmd", "vllm"],
)
def test_unknown_root_is_rejected_naming_the_root(module: Any, accepted: str) -> None:
    assert layer2(module, {"metadata": {"labels": {}}}) == [
        (
            "spec.provider.overrides.metadata",
            Reason.FORBIDDEN,
            f'root key "metadata" is not accepted by provider {module.name} (accepted: {accepted})',
        )
    ]


def test_kaito_accepts_resource_and_inference_at_the_workspace_root() -> None:
    assert (
        layer2(
            KAITO,
            {
                "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
                "inference": {"config": "c"},
            },
        )
        == []
    )


def test_kaito_rejects_resource_count_pointing_at_spec_scaling_replicas() -> None:
    assert layer2(KAITO, {"resource": {"count": 40}}) == [
        (
            "spec.provider.overrides.resource.count",
            Reason.FORBIDDEN,
            "the Workspace replica count comes from spec.scaling.replicas; set spec.scaling.replicas instead",
        )
    ]


def test_llmd_and_vllm_accept_only_an_object_spec() -> None:
    assert layer2(LLMD, {"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}) == []
    assert layer2(VLLM, {"spec": "x"}) == [
        ("spec.provider.overrides.spec", Reason.INVALID, "must be object, not string")
    ]
