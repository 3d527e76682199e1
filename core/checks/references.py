"""Secrets by reference only: Secret-name fields hold names, and no field holds a credential.

Everything in a ModelDeployment's spec and annotations is written into the GitOps repository,
so a token pasted where a Secret *name* belongs, or into an env value, an engine argument or an
annotation, would be committed. Both are refused at admission with the field and what to do;
the value itself is never echoed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.checks.credentials import find_credentials
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment, dig

# A Secret's name is a DNS-1123 subdomain (Kubernetes' IsDNS1123Subdomain): at most 253
# characters, lowercase alphanumerics, '-' and '.', starting and ending alphanumeric.
MAX_SECRET_NAME = 253
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
SPEC = FieldPath.root("spec")


def check_secret_fields(md: ModelDeployment) -> list[FieldError]:
    """Secret names that are not names, then credential-looking values, in document order."""
    errors = _secret_names(md)
    named = {e.path for e in errors}
    scanned = find_credentials(md.spec, SPEC)
    scanned += find_credentials(md.annotations, FieldPath.root("metadata", "annotations"))
    return errors + [e for e in scanned if e.path not in named]


def is_secret_name(value: str) -> bool:
    return len(value) <= MAX_SECRET_NAME and _SUBDOMAIN.fullmatch(value) is not None


def _secret_names(md: ModelDeployment) -> list[FieldError]:
    fields: list[tuple[FieldPath, Any]] = [
        (SPEC.child("secrets", "huggingFaceToken"), dig(md.spec, "secrets", "huggingFaceToken"))
    ]
    env = md.spec.get("env")
    for i, entry in enumerate(env if isinstance(env, list) else ()):
        ref = dig(entry, "valueFrom", "secretKeyRef")
        if isinstance(ref, Mapping):
            at = SPEC.child("env").index(i).child("valueFrom", "secretKeyRef", "name")
            fields.append((at, ref.get("name")))
    errors: list[FieldError] = []
    for at, value in fields:
        if isinstance(value, str) and value and not is_secret_name(value):
            detail = (
                "must be the name of a Secret (lowercase letters, digits, '-' and '.', at most "
                f"{MAX_SECRET_NAME} characters), not the credential itself; store the value in a "
                "Secret and put its name here"
            )
            errors.append(FieldError(str(at), Reason.INVALID, detail))
    return errors
