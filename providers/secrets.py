"""Credentials by value: strings that look like a token or a key, wherever they sit in an object.

One detector for both ends: admission refuses such a value (with the field and a pointer to
`secretKeyRef`), and the renderer refuses to write one into the GitOps tree. The shapes are the
documented prefixes of common issuers plus the generic PEM private key, JWT and URL-userinfo
forms. A value is never echoed: the message names the field and the kind of credential only
(messages go to logs and to the API server).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from providers.errors import FieldError, Reason
from providers.fieldpath import FieldPath

# (name, pattern). A pattern must not match inside a longer word: `(?<![A-Za-z0-9])` in front.
_B = r"(?<![A-Za-z0-9_-])"
SHAPES: tuple[tuple[str, str], ...] = (
    ("a Hugging Face token (hf_...)", _B + r"hf_[A-Za-z0-9]{30,}"),
    (
        "an OpenAI/Anthropic-style API key (sk-...)",
        _B + r"sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}",
    ),
    ("a GitHub token (ghp_/gho_/ghu_/ghs_/ghr_...)", _B + r"gh[pousr]_[A-Za-z0-9]{30,}"),
    ("a GitHub fine-grained token (github_pat_...)", _B + r"github_pat_[A-Za-z0-9_]{40,}"),
    ("a GitLab token (glpat-...)", _B + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("an AWS access key id (AKIA...)", _B + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
    ("a Google API key (AIza...)", _B + r"AIza[0-9A-Za-z_-]{35}"),
    ("a Slack token (xox...-)", _B + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("a Stripe secret key (sk_live_/rk_live_...)", _B + r"[sr]k_live_[A-Za-z0-9]{20,}"),
    ("a private key (PEM)", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    (
        "a JSON Web Token",
        _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    (
        "a password in a URL (scheme://user:password@host)",
        r"[a-z][a-z0-9+.-]*://[^\s/@:]+:[^\s/@]+@",
    ),
)
_ANY = re.compile("|".join(f"(?P<s{i}>{pattern})" for i, (_, pattern) in enumerate(SHAPES)))
HINT = "put the value in a Secret and reference it (env[].valueFrom.secretKeyRef), never inline"


# A literal every shape contains: plain substring tests (C speed) rule out almost every value
# before the regular expression runs.
_MARKERS = (
    "hf_",
    "sk-",
    "_live_",
    "gh",
    "github_pat_",
    "glpat-",
    "AKIA",
    "ASIA",
    "AIza",
    "xox",
    "PRIVATE KEY",
    "eyJ",
)


def credential_kind(value: str) -> str | None:
    """What kind of credential `value` contains, or None."""
    if not any(marker in value for marker in _MARKERS) and not ("://" in value and "@" in value):
        return None
    found = _ANY.search(value)
    if found is None:
        return None
    index = int(next(name for name, text in found.groupdict().items() if text is not None)[1:])
    return SHAPES[index][0]


def find_credentials(obj: Any, at: FieldPath | None = None) -> list[FieldError]:
    """Every string in `obj` (mappings, lists and scalars, any depth) that looks like a
    credential, as a FieldError naming its field; map keys are not scanned. Iterative, so no
    nesting depth can raise."""
    if not _holds_credential(obj):  # the common answer, without building a path per value
        return []
    errors: list[FieldError] = []
    stack: list[tuple[Any, FieldPath]] = [(obj, at if at is not None else FieldPath())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            kind = credential_kind(value)
            if kind is not None:
                errors.append(FieldError(str(path), Reason.FORBIDDEN, f"looks like {kind}; {HINT}"))
        elif isinstance(value, Mapping):
            stack.extend((v, path.child(str(k))) for k, v in reversed(list(value.items())))
        elif isinstance(value, list | tuple):
            stack.extend((v, path.index(i)) for i, v in reversed(list(enumerate(value))))
    return errors


def _holds_credential(obj: Any) -> bool:
    """Whether any string in `obj` looks like a credential (find_credentials' walk, no paths)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if credential_kind(value) is not None:
                return True
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return False
