"""Dynamo: the admission rules of its own Runway applies beyond layer 2 of the overrides. Its
workers serve under the spec's name (the Provider default: Runway passes --served-model-name)."""

from __future__ import annotations

from core.fields.errors import FieldError, Reason
from core.model.kinds import Engine, ModelDeployment, dig
from core.model.plugin import ProviderContext, Rules
from providers.dynamo.render import is_test_backend


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """Dynamo's own rules: a volume mounts read-write (the pinned DGD's volumeMounts have no
    readOnly); the mocker test backend simulates vLLM only, and serves through a standalone
    Frontend, so a gateway asked for is ignored."""
    errors: list[FieldError] = []
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


RULES = Rules(admission_checks)
