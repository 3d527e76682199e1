"""Dynamo: the admission rules of its own Runway applies beyond layer 2 of the overrides. Its
workers serve under the spec's name (the Provider default: Runway passes --served-model-name)."""

from __future__ import annotations

from collections.abc import Mapping

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import Engine, ModelDeployment, dig
from core.model.plugin import ProviderContext, Rules
from providers.dynamo.render import behind_gateway, is_test_backend

OVERRIDES = FieldPath.root("spec", "provider", "overrides")


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """Dynamo's own rules: a volume mounts read-write (the pinned DGD's volumeMounts have no
    readOnly); the Frontend's and the picker's own sizing apply only where that service runs;
    the mocker test backend simulates vLLM only, and serves through a standalone Frontend, so a
    gateway asked for is ignored."""
    errors = _sized_services(md)
    warnings = [
        f"spec.model.storage.volumes[{i}].readOnly is not honoured by Dynamo: its operator "
        "mounts every volume read-write (the DynamoGraphDeployment's volumeMounts have no readOnly)"
        for i, volume in enumerate(md.volumes)
        if volume.get("readOnly") is True
    ]
    if not is_test_backend(md):
        return errors, warnings
    if md.engine_type and md.engine_type != Engine.VLLM:
        detail = "the dynamo mocker test backend only supports the vllm engine"
        errors.append(FieldError("spec.engine.type", Reason.UNSUPPORTED, detail))
    if dig(md.spec, "gateway", "enabled") is True:
        warnings.append(
            "spec.gateway.enabled is ignored by the dynamo mocker test backend: it serves through "
            "a standalone Frontend, with no endpoint picker and no gateway objects"
        )
    return errors, warnings


def _sized_services(md: ModelDeployment) -> list[FieldError]:
    """overrides.frontend sizes the standalone Frontend, which runs only without a gateway
    (behind one each worker serves through its own frontend sidecar); overrides.epp configures
    Dynamo's endpoint picker, which runs only behind one. Either where its service does not run
    would be dropped without a word."""
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    gateway = behind_gateway(md)
    if gateway and "frontend" in overrides:
        detail = (
            "behind a gateway Dynamo runs no standalone Frontend (each worker serves through its "
            "own frontend sidecar, chosen by the endpoint picker), so frontend sizes nothing: "
            "remove it, or size the picker with epp.replicas"
        )
        return [FieldError(str(OVERRIDES.child("frontend")), Reason.FORBIDDEN, detail)]
    if not gateway and "epp" in overrides:
        detail = (
            "Dynamo's endpoint picker (the Epp service) runs only behind a gateway "
            "(spec.gateway.enabled: true, and not with the mocker test backend); without one "
            "the standalone Frontend routes: remove epp, or size the Frontend with frontend"
        )
        return [FieldError(str(OVERRIDES.child("epp")), Reason.FORBIDDEN, detail)]
    return []


RULES = Rules(admission_checks)
