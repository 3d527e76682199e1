"""The name a client sends in "model" for a ModelDeployment, and the rule such names obey.

`served_name` is the one function that says which name that is: the renderer's HTTPRoute matches
it and the gateway merge registers it in LiteLLM; admission holds the two fields it reads first
(gateway.modelName, servedName) to the rule below. Its last resort, spec.model.id, is not held
to it at admission (nor in the route, which matches exactly); the merge refuses it there.

Served names are literal. LiteLLM treats a model_name holding `*` as a pattern (`*` alone is a catch-all, `openai/*` every
name under a prefix), so a wildcard name would take every request no other entry matches. A name
here is letters, digits and `. _ : / -`, starting with a letter or digit, at most 253 characters:
nothing LiteLLM or a route matcher reads as a pattern. ExternalModelProvider servedNames,
ModelDeployment servedName and gateway.modelName, and every name the gateway merge registers
(model.id included) are held to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment, dig

MAX_SERVED_NAME = 253
# Always used with fullmatch: a `$` anchor would also match before a trailing newline.
SERVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}")
LITERAL = (
    "must be a literal model name: letters, digits and . _ : / - (starting with a letter or "
    f"digit, at most {MAX_SERVED_NAME} characters); wildcards and patterns are refused"
)
# The fields `served_name` reads before spec.model.id and metadata.name, which admission checks.
GATEWAY_MODEL_NAME_AT = FieldPath.root("spec", "gateway", "modelName")
SERVED_NAME_AT = FieldPath.root("spec", "model", "servedName")


def served_name(
    md: ModelDeployment, capabilities: Mapping[str, Any], fixed: str | None = None
) -> str:
    """The one name clients send in "model" for a hydrated ModelDeployment (`capabilities`: its
    provider's gateway capabilities for its engine; `fixed`: the name its operator serves it
    under, when the operator decides that, from the registry's served_as): `fixed`, else
    spec.gateway.modelName, else the name the engine answers to. (Admission refuses a
    gateway.modelName that differs from a fixed name: the engine would refuse the requests.)"""
    if fixed:
        return fixed
    explicit = dig(md.spec, "gateway", "modelName")
    if explicit:
        return str(explicit)
    return engine_model_name(md, capabilities)


def engine_model_name(
    md: ModelDeployment, capabilities: Mapping[str, Any], fixed: str | None = None
) -> str:
    """The name the model server itself answers to: `fixed` (its operator's choice), else
    spec.model.servedName (unless the provider ignores it), else spec.model.id, else the
    ModelDeployment's name."""
    if fixed:
        return fixed
    if md.served_name and not capabilities.get("ignoresServedName"):
        return md.served_name
    return md.model_id or md.name


def is_literal(name: object) -> bool:
    """Whether `name` is a literal served name (never a pattern LiteLLM would expand)."""
    return isinstance(name, str) and SERVED_NAME.fullmatch(name) is not None


def check_served_names(md: ModelDeployment) -> list[FieldError]:
    """spec.model.servedName and spec.gateway.modelName, when set, are literal names."""
    errors = []
    for at, value in (
        (SERVED_NAME_AT, dig(md.spec, "model", "servedName")),
        (GATEWAY_MODEL_NAME_AT, dig(md.spec, "gateway", "modelName")),
    ):
        if isinstance(value, str) and value and not is_literal(value):
            errors.append(FieldError(str(at), Reason.INVALID, LITERAL))
    return errors
