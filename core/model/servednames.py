"""Served names are literal: the one rule for every name a client sends in "model".

LiteLLM treats a model_name holding `*` as a pattern (`*` alone is a catch-all, `openai/*` every
name under a prefix), so a wildcard name would take every request no other entry matches. A name
here is letters, digits and `. _ : / -`, starting with a letter or digit, at most 253 characters:
nothing LiteLLM or a route matcher reads as a pattern. ExternalModelProvider servedNames,
ModelDeployment servedName and gateway.modelName, and every name the gateway merge registers
(model.id included) are held to it.
"""

from __future__ import annotations

import re

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


def is_literal(name: object) -> bool:
    """Whether `name` is a literal served name (never a pattern LiteLLM would expand)."""
    return isinstance(name, str) and SERVED_NAME.fullmatch(name) is not None


def check_served_names(md: ModelDeployment) -> list[FieldError]:
    """spec.model.servedName and spec.gateway.modelName, when set, are literal names."""
    errors = []
    for at, value in (
        (FieldPath.root("spec", "model", "servedName"), dig(md.spec, "model", "servedName")),
        (FieldPath.root("spec", "gateway", "modelName"), dig(md.spec, "gateway", "modelName")),
    ):
        if isinstance(value, str) and value and not is_literal(value):
            errors.append(FieldError(str(at), Reason.INVALID, LITERAL))
    return errors
