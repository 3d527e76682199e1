"""Admission handlers: an AdmissionRequest in, an Answer (the AdmissionResponse) out; no HTTP.

Every decision comes from `providers`, the same code `runway validate` runs. Requests for other
kinds, other operations or a subresource are allowed untouched. dryRun changes nothing: no
handler has side effects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.admission.configs import check_external_provider, check_provider_config
from core.admission.hydrate import hydrate_shared
from core.admission.pipeline import admit
from core.model.destinations import NO_DESTINATIONS, Destinations
from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
)
from core.selection.configs import ProviderRegistry
from webhook.access import SecretAccess, secret_access_errors
from webhook.responses import allowed, denied, patched
from webhook.review import AdmissionRequest, AdmissionResponse


@dataclass(frozen=True, slots=True)
class Answer:
    """A handler's answer, plus the provider it stamped (for the selection metric)."""

    response: AdmissionResponse
    provider: str | None = None
    selection: str | None = None  # "explicit" or "auto"


Handler = Callable[[AdmissionRequest, ProviderRegistry], Answer]


def _applies(req: AdmissionRequest, group: str, kind: str) -> bool:
    return (
        req["kind"]["group"] == group
        and req["kind"]["kind"] == kind
        and req["operation"] in ("CREATE", "UPDATE")
        and not req.get("subResource")
    )


def _old(req: AdmissionRequest) -> dict[str, Any] | None:
    return req.get("oldObject") if req["operation"] == "UPDATE" else None


def mutate_model_deployment(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Defaults and selection stamped in, as a JSONPatch."""
    if not _applies(req, GROUP, MODEL_DEPLOYMENT):
        return Answer(allowed(req["uid"]))
    before = req["object"]
    result = hydrate_shared(before, old=_old(req), registry=registry)
    if result.errors or result.provider is None:
        # Denied here, the validating webhook never runs: report every error, not only selection's.
        every = admit(before, old=_old(req), registry=registry).errors
        return Answer(denied(req["uid"], every, warnings=result.warnings))
    response = patched(req["uid"], before, result.obj, warnings=result.warnings)
    return Answer(response, result.provider.value, result.provider.choice.value)


def validate_model_deployment(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Every rule; hydrating again first makes this safe even if the mutating webhook was skipped."""
    if not _applies(req, GROUP, MODEL_DEPLOYMENT):
        return Answer(allowed(req["uid"]))
    admission = admit(req["object"], old=_old(req), registry=registry)
    if not admission.allowed:
        return Answer(denied(req["uid"], admission.errors, warnings=admission.validation_warnings))
    return Answer(allowed(req["uid"], admission.validation_warnings))


def validate_provider_config(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Schema, rule size, and every selection rule must compile."""
    if not _applies(req, GROUP, INFERENCE_PROVIDER_CONFIG):
        return Answer(allowed(req["uid"]))
    errors = check_provider_config(req["object"])
    return Answer(denied(req["uid"], errors) if errors else allowed(req["uid"]))


def validate_external_provider(
    req: AdmissionRequest,
    registry: ProviderRegistry,
    *,
    destinations: Destinations = NO_DESTINATIONS,
    access: SecretAccess | None = None,
) -> Answer:
    """Base URL at a public destination (or one of `destinations`), a Secret key reference
    (never an inline key), unique served names; the requested-by annotation cannot change
    after create. With `access` (the webhook is connected to the API server), the requesting
    user must also be allowed to get the referenced Secret, on every CREATE and UPDATE (whoever
    points a provider somewhere sends its key there): webhook/access.py."""
    if not _applies(req, EMP_GROUP, EXTERNAL_MODEL_PROVIDER):
        return Answer(allowed(req["uid"]))
    errors = check_external_provider(req["object"], old=_old(req), destinations=destinations)
    if not errors and access is not None:
        user_info = req.get("userInfo")
        errors = secret_access_errors(req["object"], user_info, access)
    return Answer(denied(req["uid"], errors) if errors else allowed(req["uid"]))
