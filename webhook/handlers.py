"""Admission handlers: an AdmissionRequest in, an Answer (the AdmissionResponse) out; no HTTP.

Every decision is a Verdict of core.admission.entry.admit_object, the entry `runway validate`
calls too, for the kind the request names; `response_of` says it as an AdmissionResponse. What
only the webhook can ask (may the requester read the Secret it references: webhook/access.py)
is added to the verdict here. Requests for other kinds, other operations or a subresource are
allowed untouched. dryRun changes nothing: no handler has side effects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.admission.entry import admit_object
from core.admission.verdict import EMP, IPC, MD, Kind, Step, Verdict
from core.model.destinations import NO_DESTINATIONS, Destinations
from core.selection.configs import ProviderRegistry
from webhook.access import SecretAccess, secret_access_errors
from webhook.responses import allowed, denied, patched_with
from webhook.review import AdmissionRequest, AdmissionResponse


@dataclass(frozen=True, slots=True)
class Answer:
    """A handler's answer, plus the provider it stamped (for the selection metric)."""

    response: AdmissionResponse
    provider: str | None = None
    selection: str | None = None  # "explicit" or "auto"


Handler = Callable[[AdmissionRequest, ProviderRegistry], Answer]


def _applies(req: AdmissionRequest, kind: Kind) -> bool:
    return (
        (req["kind"]["group"], req["kind"]["kind"]) == kind
        and req["operation"] in ("CREATE", "UPDATE")
        and not req.get("subResource")
    )


def _old(req: AdmissionRequest) -> dict[str, Any] | None:
    return req.get("oldObject") if req["operation"] == "UPDATE" else None


def _verdict(
    req: AdmissionRequest,
    registry: ProviderRegistry,
    kind: Kind,
    step: Step,
    destinations: Destinations = NO_DESTINATIONS,
) -> Verdict:
    """Admission of the request's object, as the kind the request names (core.admission.entry)."""
    return admit_object(
        req["object"],
        old=_old(req),
        registry=registry,
        step=step,
        kind=kind,
        destinations=destinations,
    )


def response_of(uid: str, verdict: Verdict) -> AdmissionResponse:
    """The AdmissionResponse that says `verdict`: denied with every error, or allowed with
    its patch (if any); its warnings either way."""
    if not verdict.allowed:
        return denied(uid, verdict.errors, warnings=verdict.warnings)
    return patched_with(uid, verdict.patch(), verdict.warnings)


def mutate_model_deployment(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Defaults and selection stamped in, as a JSONPatch."""
    if not _applies(req, MD):
        return Answer(allowed(req["uid"]))
    verdict = _verdict(req, registry, MD, Step.MUTATE)
    response = response_of(req["uid"], verdict)
    if not verdict.allowed or verdict.provider is None:
        return Answer(response)
    return Answer(response, verdict.provider.value, verdict.selection)


def validate_model_deployment(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Every rule; hydrating again first makes this safe even if the mutating webhook was skipped."""
    if not _applies(req, MD):
        return Answer(allowed(req["uid"]))
    return Answer(response_of(req["uid"], _verdict(req, registry, MD, Step.VALIDATE)))


def validate_provider_config(req: AdmissionRequest, registry: ProviderRegistry) -> Answer:
    """Schema, rule size, and every selection rule must compile."""
    if not _applies(req, IPC):
        return Answer(allowed(req["uid"]))
    return Answer(response_of(req["uid"], _verdict(req, registry, IPC, Step.VALIDATE)))


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
    if not _applies(req, EMP):
        return Answer(allowed(req["uid"]))
    verdict = _verdict(req, registry, EMP, Step.VALIDATE, destinations)
    if verdict.allowed and access is not None:
        user_info = req.get("userInfo")
        verdict = verdict.denied_by(secret_access_errors(req["object"], user_info, access))
    return Answer(response_of(req["uid"], verdict))
