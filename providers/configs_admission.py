"""Admission rules for the two other kinds: InferenceProviderConfig and ExternalModelProvider."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from providers.cel import compile_rule, new_environment
from providers.crds import external_model_provider_spec
from providers.errors import FieldError, Reason
from providers.fieldpath import FieldPath
from providers.model import EMP_API_VERSION, EXTERNAL_MODEL_PROVIDER, dig
from providers.registry import config_errors, cost_problem
from providers.schema import check_schema

# Model names clients put in "model": letters, digits and . _ : / - (e.g. meta-llama/Llama-3.1-8B).
SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$")
# Keys that would carry a credential inline; credentials are only ever a Secret reference.
INLINE_CREDENTIALS = frozenset(
    {"apiKey", "api_key", "key", "token", "secret", "password", "credentials"}
)
_INLINE = "credentials are never inline; reference a Secret key in spec.credentialsSecretRef"


def check_provider_config(obj: Mapping[str, Any]) -> list[FieldError]:
    """An InferenceProviderConfig: its limits and schema, then every rule must compile within
    its length and cost limits, and the rules together within the config's cost limit."""
    errors = config_errors(obj)
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


def check_external_provider(obj: Mapping[str, Any]) -> list[FieldError]:
    """An ExternalModelProvider: one connection (an http(s) base URL and a Secret key reference)
    and the models it offers, each servedName a valid token and unique within the object."""
    if obj.get("apiVersion") != EMP_API_VERSION or obj.get("kind") != EXTERNAL_MODEL_PROVIDER:
        return [
            FieldError(
                "kind", Reason.INVALID, f"expected {EMP_API_VERSION} {EXTERNAL_MODEL_PROVIDER}"
            )
        ]
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
    errors += _check_base_url(spec["baseURL"], at.child("baseURL"))
    seen: set[str] = set()
    for i, model in enumerate(spec["models"]):
        name, where = model["servedName"], at.child("models").index(i).child("servedName")
        if not SERVED_NAME.match(name):
            errors.append(
                FieldError(
                    str(where),
                    Reason.INVALID,
                    "must be a model name: letters, digits and . _ : / - (starting with a letter or digit)",
                )
            )
        elif name in seen:
            errors.append(
                FieldError(
                    str(where), Reason.DUPLICATE, f'"{name}" is offered twice by this provider'
                )
            )
        seen.add(name)
    return errors


def _check_base_url(url: str, at: FieldPath) -> list[FieldError]:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return [
            FieldError(str(at), Reason.INVALID, "must be an http:// or https:// URL with a host")
        ]
    if parsed.username or parsed.password:
        return [
            FieldError(
                str(at),
                Reason.FORBIDDEN,
                "must not carry credentials; reference a Secret key in spec.credentialsSecretRef",
            )
        ]
    if parsed.query or parsed.fragment:
        return [FieldError(str(at), Reason.INVALID, "must not have a query or a fragment")]
    return []
