"""spec.model.storage.volumes: the rules on create and update, and managed-volume immutability."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.defaults import managed_claim_name
from core.model.kinds import ModelDeployment, VolumePurpose
from core.model.quantity import parse_quantity, quantity_problem

VOLUMES = FieldPath.root("spec", "model", "storage", "volumes")
SYSTEM_PATHS = ("/dev", "/proc", "/sys", "/etc", "/var/run")
MAX_NAME = 253
_MANAGED_FIELDS = ("name", "claimName", "mountPath", "purpose", "readOnly", "accessMode")


def check_volumes(md: ModelDeployment) -> list[FieldError]:
    """Every storage rule, volume by volume, then the rules across the list."""
    errors: list[FieldError] = []
    seen: dict[str, set[str]] = {"name": set(), "mountPath": set(), "claimName": set()}
    for i, volume in enumerate(md.volumes):
        errors += _check_volume(volume, VOLUMES.index(i), md.name)
        for key, values in seen.items():
            value = volume.get(key)
            if isinstance(value, str) and value:
                if value in values:
                    errors.append(
                        FieldError(
                            str(VOLUMES.index(i).child(key)), Reason.DUPLICATE, f"duplicate {key}"
                        )
                    )
                values.add(value)
    for purpose in (VolumePurpose.MODEL_CACHE, VolumePurpose.COMPILATION_CACHE):
        if sum(1 for v in md.volumes if v.get("purpose") == purpose) > 1:
            detail = f"at most one volume with purpose {purpose} is allowed"
            errors.append(FieldError(str(VOLUMES), Reason.INVALID, detail))
    return errors


def _check_volume(volume: Mapping[str, Any], at: FieldPath, md_name: str) -> list[FieldError]:
    errors: list[FieldError] = []
    managed = volume.get("size") is not None
    claim, mount = volume.get("claimName") or "", volume.get("mountPath") or ""
    if managed:
        expected = managed_claim_name(md_name, str(volume.get("name", "")))
        if volume.get("readOnly") is True:
            errors.append(
                FieldError(
                    str(at.child("readOnly")),
                    Reason.INVALID,
                    "must not be true when size is set (Runway-created claims need write access)",
                )
            )
        if claim and claim != expected:
            errors.append(
                FieldError(
                    str(at.child("claimName")),
                    Reason.INVALID,
                    f'must not be set when size is set (it is generated as "{expected}")',
                )
            )
        if len(expected) > MAX_NAME:
            errors.append(
                FieldError(
                    str(at.child("name")),
                    Reason.TOO_LONG,
                    f"the claim name {len(expected)} characters long exceeds {MAX_NAME}",
                )
            )
        quantity = parse_quantity(volume.get("size"))
        if quantity is None or quantity <= 0:
            problem = quantity_problem(volume.get("size"))
            detail = "must be a positive quantity such as 100Gi"
            errors.append(
                FieldError(
                    str(at.child("size")),
                    Reason.INVALID,
                    f"{problem}; {detail}" if problem else detail,
                )
            )
    else:
        if not claim:
            errors.append(
                FieldError(
                    str(at.child("claimName")),
                    Reason.REQUIRED,
                    "required when size is not set (name an existing PersistentVolumeClaim)",
                )
            )
        for key in ("accessMode", "storageClassName"):
            if key in volume:
                errors.append(
                    FieldError(
                        str(at.child(key)),
                        Reason.INVALID,
                        "only applies when size is set (a claim Runway creates)",
                    )
                )
    if mount and not mount.startswith("/"):
        errors.append(
            FieldError(
                str(at.child("mountPath")),
                Reason.INVALID,
                "must be an absolute path (start with /)",
            )
        )
    if not mount and volume.get("purpose") == VolumePurpose.CUSTOM:
        errors.append(
            FieldError(
                str(at.child("mountPath")), Reason.REQUIRED, "required when purpose is custom"
            )
        )
    system = next((p for p in SYSTEM_PATHS if mount == p or mount.startswith(p + "/")), None)
    if system is not None:
        errors.append(
            FieldError(
                str(at.child("mountPath")),
                Reason.INVALID,
                f"must not overlap the system path {system}",
            )
        )
    return errors


def check_managed_unchanged(
    new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]]
) -> list[FieldError]:
    """UPDATE: a volume Runway manages (size set) can be neither removed nor changed."""
    errors: list[FieldError] = []
    by_name = {v.get("name"): (i, v) for i, v in enumerate(new)}
    for before in old:
        if before.get("size") is None:
            continue
        name = before.get("name")
        if name not in by_name:
            detail = f'managed volume "{name}" cannot be removed (it owns a claim); delete the ModelDeployment to remove managed storage'
            errors.append(FieldError(str(VOLUMES), Reason.FORBIDDEN, detail))
            continue
        i, after = by_name[name]
        if not _same_volume(before, after):
            detail = "a managed volume is immutable once created; delete and recreate the ModelDeployment to change it"
            errors.append(FieldError(str(VOLUMES.index(i)), Reason.IMMUTABLE, detail))
    return errors


def _same_volume(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if any(a.get(k) != b.get(k) for k in _MANAGED_FIELDS):
        return False
    # nil (cluster default class) and "" (no class) are different choices.
    if ("storageClassName" in a) != ("storageClassName" in b) or a.get("storageClassName") != b.get(
        "storageClassName"
    ):
        return False
    return parse_quantity(a.get("size")) == parse_quantity(b.get("size"))
