"""spec.model.storage.volumes rules."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.pipeline import admit
from core.fields.errors import Reason
from core.selection.configs import ProviderRegistry
from tests.support.builders import model_deployment
from tests.support.validation import errors

VOL = "spec.model.storage.volumes"


def with_volumes(*volumes: dict[str, Any], name: str = "llama") -> dict[str, Any]:
    return model_deployment(name, gpu=1, model={"id": "x", "storage": {"volumes": list(volumes)}})


def test_valid_managed_and_existing_claims_pass(shipped: ProviderRegistry) -> None:
    obj = with_volumes(
        {"name": "cache", "purpose": "modelCache", "size": "200Gi", "storageClassName": ""},
        {"name": "compile", "purpose": "compilationCache", "claimName": "shared"},
        {"name": "data", "claimName": "data", "mountPath": "/data"},
    )

    assert errors(obj, shipped) == []


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        (
            {"name": "v", "mountPath": "/v"},
            (
                f"{VOL}[0].claimName",
                Reason.REQUIRED,
                "required when size is not set (name an existing PersistentVolumeClaim)",
            ),
        ),
        (
            {"name": "v", "size": "1Gi", "readOnly": True, "mountPath": "/v"},
            (
                f"{VOL}[0].readOnly",
                Reason.INVALID,
                "must not be true when size is set (Runway-created claims need write access)",
            ),
        ),
        (
            {"name": "v", "size": "1Gi", "claimName": "other", "mountPath": "/v"},
            (
                f"{VOL}[0].claimName",
                Reason.INVALID,
                'must not be set when size is set (it is generated as "llama-v")',
            ),
        ),
        (
            {"name": "v", "size": "0", "mountPath": "/v"},
            (f"{VOL}[0].size", Reason.INVALID, "must be a positive quantity such as 100Gi"),
        ),
        (
            {"name": "v", "claimName": "c", "accessMode": "ReadWriteOnce", "mountPath": "/v"},
            (
                f"{VOL}[0].accessMode",
                Reason.INVALID,
                "only applies when size is set (a claim Runway creates)",
            ),
        ),
        (
            {"name": "v", "claimName": "c", "storageClassName": "", "mountPath": "/v"},
            (
                f"{VOL}[0].storageClassName",
                Reason.INVALID,
                "only applies when size is set (a claim Runway creates)",
            ),
        ),
        (
            {"name": "v", "claimName": "c", "mountPath": "relative/path"},
            (f"{VOL}[0].mountPath", Reason.INVALID, "must be an absolute path (start with /)"),
        ),
        (
            {"name": "v", "claimName": "c"},
            (f"{VOL}[0].mountPath", Reason.REQUIRED, "required when purpose is custom"),
        ),
        (
            {"name": "v", "claimName": "c", "mountPath": "/etc/models"},
            (f"{VOL}[0].mountPath", Reason.INVALID, "must not overlap the system path /etc"),
        ),
        (
            {"name": "v", "claimName": "c", "mountPath": "/var/run"},
            (f"{VOL}[0].mountPath", Reason.INVALID, "must not overlap the system path /var/run"),
        ),
    ],
    ids=[
        "claim-required",
        "managed-read-only",
        "managed-foreign-claim",
        "zero-size",
        "access-mode-unmanaged",
        "storage-class-unmanaged",
        "relative-mount",
        "custom-needs-mount",
        "system-path-below",
        "system-path-equal",
    ],
)
def test_volume_rule(
    volume: dict[str, Any], expected: tuple[str, Reason, str], shipped: ProviderRegistry
) -> None:
    assert errors(with_volumes(volume), shipped) == [expected]


def test_system_path_prefix_needs_a_path_boundary(shipped: ProviderRegistry) -> None:
    assert (
        errors(with_volumes({"name": "v", "claimName": "c", "mountPath": "/etcetera"}), shipped)
        == []
    )


def test_duplicates_across_volumes_are_rejected(shipped: ProviderRegistry) -> None:
    obj = with_volumes(
        {"name": "a", "claimName": "c", "mountPath": "/m", "purpose": "modelCache"},
        {"name": "b", "claimName": "c", "mountPath": "/m", "purpose": "modelCache"},
    )

    assert errors(obj, shipped) == [
        (f"{VOL}[1].mountPath", Reason.DUPLICATE, "duplicate mountPath"),
        (f"{VOL}[1].claimName", Reason.DUPLICATE, "duplicate claimName"),
        (VOL, Reason.INVALID, "at most one volume with purpose modelCache is allowed"),
    ]


def test_a_duplicate_volume_name_is_reported_on_its_name(shipped: ProviderRegistry) -> None:
    """On volumes[1].name, as AI Runway and the API server's built-in lists do."""
    obj = with_volumes(
        {"name": "a", "claimName": "x", "mountPath": "/x"},
        {"name": "a", "claimName": "y", "mountPath": "/y"},
    )

    assert [(e.path, e.reason, e.detail) for e in admit(obj, registry=shipped).errors] == [
        (f"{VOL}[1].name", Reason.DUPLICATE, '"a"')
    ]


def test_long_managed_claim_name_is_rejected(shipped: ProviderRegistry) -> None:
    obj = with_volumes({"name": "v", "size": "1Gi", "mountPath": "/v"}, name="m" * 252)

    assert errors(obj, shipped) == [
        (f"{VOL}[0].name", Reason.TOO_LONG, "the claim name 254 characters long exceeds 253"),
        # the name rule (core/model/names.py) refuses the name itself as well: a label value
        ("metadata.name", Reason.INVALID, "must be at most 63 characters, not 252"),
    ]
