"""Admission rules for the two other kinds: InferenceProviderConfig and ExternalModelProvider."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.cel.rules import compile_rule, new_environment
from core.checks.credentials import redact_errors
from core.checks.health import HEALTH_ANNOTATION, health_spec
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.destinations import NO_DESTINATIONS, Destinations, destination_problem
from core.model.kinds import EMP_API_VERSION, EXTERNAL_MODEL_PROVIDER, dig
from core.model.names import NameRule, check_object_names
from core.model.servednames import LITERAL, is_literal
from core.model.urls import url_host, url_problem
from core.schema.bounds import size_errors
from core.schema.crds import external_model_provider_spec
from core.schema.structural import check_schema
from core.selection.configs import config_errors, cost_problem

# A Secret's name (DNS subdomain) and a key of its data, as the API server spells them.
SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
# Who asked for the provider (stamped by the portal); set at create, never changed afterwards.
REQUESTED_BY = "gateway.tokenfactory.mirantis.com/requested-by"
# Keys that would carry a credential inline; credentials are only ever a Secret reference.
INLINE_CREDENTIALS = frozenset(
    {"apiKey", "api_key", "key", "token", "secret", "password", "credentials"}
)
_INLINE = "credentials are never inline; reference a Secret key in spec.credentialsSecretRef"


def check_provider_config(obj: Mapping[str, Any]) -> list[FieldError]:
    """An InferenceProviderConfig: its limits and schema, then every rule must compile within
    its length and cost limits, and the rules together within the config's cost limit."""
    errors = config_errors(obj) + _check_health(obj)
    if errors:
        return errors
    env = new_environment()
    at = FieldPath.root("spec", "selectionRules")
    rules = [
        compile_rule(env, rule["condition"], 0) for rule in dig(obj, "spec", "selectionRules") or ()
    ]
    for i, rule in enumerate(rules):
        if rule.compile_error is not None:
            where = str(at.index(i).child("condition"))
            errors.append(FieldError(where, Reason.INVALID, rule.compile_error))
    over = cost_problem(rules)
    if over is not None:
        errors.append(FieldError(str(at), Reason.INVALID, over))
    return errors


def _check_health(obj: Mapping[str, Any]) -> list[FieldError]:
    """The airunway.ai/health annotation as the status controller reads it (JSON, CRD checks,
    operator pods by namespace and label selector, each selector one the API server accepts):
    a config the controller could not check is denied, not admitted to fail every pass."""
    annotations = dig(obj, "metadata", "annotations")
    text = annotations.get(HEALTH_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return []
    spec = health_spec({HEALTH_ANNOTATION: text})
    if not isinstance(spec, str):
        return []
    at = FieldPath.root("metadata", "annotations").key(HEALTH_ANNOTATION)
    return [FieldError(str(at), Reason.INVALID, spec)]


def check_external_provider(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    destinations: Destinations = NO_DESTINATIONS,
) -> list[FieldError]:
    """An ExternalModelProvider: one connection (an http(s) base URL at a public destination, or
    one of `destinations`, and a Secret key reference) and the models it offers, each servedName
    a literal name and unique within the object. On UPDATE (`old` given) the requested-by
    annotation must be what it was at create."""
    errors = _check_requested_by(obj, old) if old is not None else []
    errors += check_object_names(obj, NameRule.SUBDOMAIN)
    return list(redact_errors(errors + _check_external_provider(obj, destinations)))


def requested_by(obj: Mapping[str, Any]) -> str | None:
    """The requested-by annotation (attribution), or None."""
    value = dig(obj, "metadata", "annotations", REQUESTED_BY)
    return value if isinstance(value, str) else None


def _check_requested_by(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    if requested_by(obj) == requested_by(old):
        return []
    at = FieldPath.root("metadata", "annotations").key(REQUESTED_BY)
    return [
        FieldError(
            str(at),
            Reason.IMMUTABLE,
            "is set when the provider is created and cannot be added, changed or removed later",
        )
    ]


def _check_external_provider(
    obj: Mapping[str, Any], destinations: Destinations
) -> list[FieldError]:
    if obj.get("apiVersion") != EMP_API_VERSION or obj.get("kind") != EXTERNAL_MODEL_PROVIDER:
        return [
            FieldError(
                "kind", Reason.INVALID, f"expected {EMP_API_VERSION} {EXTERNAL_MODEL_PROVIDER}"
            )
        ]
    errors = size_errors(obj)
    if errors:  # nothing below may walk an object this large
        return errors
    spec = obj.get("spec")
    at = FieldPath.root("spec")
    if spec is None:
        return [FieldError("spec", Reason.REQUIRED, "required field is missing")]
    if not isinstance(spec, Mapping):
        return check_schema(spec, external_model_provider_spec(), at)
    inline = [key for key in spec if key in INLINE_CREDENTIALS]
    errors = [FieldError(str(at.child(key)), Reason.FORBIDDEN, _INLINE) for key in inline]
    rest = {k: v for k, v in spec.items() if k not in inline}
    errors += check_schema(rest, external_model_provider_spec(), at)
    if errors:
        return errors
    errors += _check_base_url(spec["baseURL"], at.child("baseURL"), destinations)
    errors += _check_secret_ref(spec.get("credentialsSecretRef"), at.child("credentialsSecretRef"))
    seen: set[str] = set()
    for i, model in enumerate(spec["models"]):
        name, where = model["servedName"], at.child("models").index(i).child("servedName")
        if not is_literal(name):
            errors.append(FieldError(str(where), Reason.INVALID, LITERAL))
        elif name in seen:
            errors.append(
                FieldError(
                    str(where), Reason.DUPLICATE, f'"{name}" is offered twice by this provider'
                )
            )
        seen.add(name)
    return errors


def _check_base_url(url: str, at: FieldPath, destinations: Destinations) -> list[FieldError]:
    found = url_problem(url)
    if found is None:
        where = destination_problem(url_host(url), destinations)
        return [] if where is None else [FieldError(str(at), Reason.FORBIDDEN, where)]
    detail, credential = found
    return [FieldError(str(at), Reason.FORBIDDEN if credential else Reason.INVALID, detail)]


def _check_secret_ref(ref: Mapping[str, Any] | None, at: FieldPath) -> list[FieldError]:
    if ref is None:
        return []
    errors = []
    if not (len(ref["name"]) <= 253 and SECRET_NAME.fullmatch(ref["name"])):
        errors.append(
            FieldError(
                str(at.child("name")), Reason.INVALID, "must be a Secret name (DNS subdomain)"
            )
        )
    key = ref.get("key", "apiKey")
    if not (len(key) <= 253 and SECRET_KEY.fullmatch(key)):
        errors.append(
            FieldError(
                str(at.child("key")),
                Reason.INVALID,
                "must be a key of a Secret's data: letters, digits and - . _",
            )
        )
    return errors
