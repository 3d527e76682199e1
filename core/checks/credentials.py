"""Credentials by value: strings that look like a token or a key, wherever they sit in an object.

One detector for both ends: admission refuses such a value (with the field and a pointer to
`secretKeyRef`), and the renderer refuses to write one into the GitOps tree. The shapes are the
documented prefixes of common issuers plus the generic PEM private key, JWT and URL-userinfo
forms (an empty user too: `redis://:password@host`), and an AWS secret access key where its name
says so (an env entry or map key named `..._SECRET_ACCESS_KEY`, or `aws_secret_access_key=` in a
string). Map keys are scanned like values. A value is never echoed: the message names the field
and the kind of credential only, a key that looks like a credential is shown as `<credential>`
in the path, and `redact` blanks any credential in a message built elsewhere (messages go to
logs and to the API server).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath

# (name, the literals the pattern contains, pattern). Every pattern but the URL's starts with its
# literal and then looks behind it, so that (a) it never matches inside a longer word, and (b) the regular
# expression engine finds the literal with its fast prefix scan and tries the rest only where it
# occurs: the scan is linear in the value's length. A pattern that could start anywhere in a run
# of the characters it repeats rescans the rest of the run from each of them: the URL shape did
# (`[a-z][a-z0-9+.-]*://...`): 6 s for a 64 KB value, hours for the 3 MiB a request may hold.
_W = "[A-Za-z0-9_]"  # a word character: none may come right before a token (a dash may: --hf_...)
SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("a Hugging Face token (hf_...)", ("hf_",), rf"hf_(?<!{_W}hf_)[A-Za-z0-9]{{30,}}"),
    (
        "an OpenAI/Anthropic-style API key (sk-...)",
        ("sk-",),
        rf"sk-(?<!{_W}sk-)(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{{20,}}",
    ),
    (
        "a GitHub token (ghp_/gho_/ghu_/ghs_/ghr_...)",
        ("gh",),
        rf"gh(?<!{_W}gh)[pousr]_[A-Za-z0-9]{{30,}}",
    ),
    (
        "a GitHub fine-grained token (github_pat_...)",
        ("github_pat_",),
        rf"github_pat_(?<!{_W}github_pat_)[A-Za-z0-9_]{{40,}}",
    ),
    ("a GitLab token (glpat-...)", ("glpat-",), rf"glpat-(?<!{_W}glpat-)[A-Za-z0-9_-]{{20,}}"),
    (
        "an AWS access key id (AKIA...)",
        ("AKIA", "ASIA"),
        rf"A(?:KIA|SIA)(?<!{_W}A...)[0-9A-Z]{{16}}(?![0-9A-Z])",
    ),
    ("a Google API key (AIza...)", ("AIza",), rf"AIza(?<!{_W}AIza)[0-9A-Za-z_-]{{35}}"),
    ("a Slack token (xox...-)", ("xox",), rf"xox(?<!{_W}xox)[abposr]-[A-Za-z0-9-]{{10,}}"),
    (
        "a Stripe secret key (sk_live_/rk_live_...)",
        ("k_live_",),
        rf"k_live_(?<=[sr]k_live_)(?<!{_W}.k_live_)[A-Za-z0-9]{{20,}}",
    ),
    ("a private key (PEM)", ("-----BEGIN ",), r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    (
        "a JSON Web Token",
        ("eyJ",),
        rf"eyJ(?<!{_W}eyJ)[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}}",
    ),
    (
        "an AWS secret access key (aws_secret_access_key=...)",
        ("ccess_key", "ccess-key"),
        r"(?i:secret[_-]access[_-]key)[\"']?[ \t]*[=:][ \t]*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
    ),
    (
        # The one pattern that cannot start with its literal (the scheme comes first): it starts
        # only where a run of scheme characters starts, so each run is scanned once. The user
        # may be empty (`redis://:password@host`, Redis' AUTH without a user name).
        "a password in a URL (scheme://user:password@host)",
        ("://",),
        r"(?<![a-z0-9+.-])[0-9+.-]*[a-z][a-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@",
    ),
)
# An AWS secret access key alone is 40 characters of base64: only its name tells it apart.
AWS_SECRET = "an AWS secret access key"
_AWS_SECRET_NAME = re.compile(r"(?:.*[_-])?(?:AWS[_-])?SECRET[_-]ACCESS[_-]KEY", re.IGNORECASE)
_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}")
KEY_SHOWN = "<credential>"  # how a map key that looks like a credential appears in a path
REDACTED = "<redacted>"
_PATTERNS = tuple(re.compile(pattern) for _, _, pattern in SHAPES)
# Every shape's literals, so that a cheap search rules out almost every value before any shape
# is searched. The literals of a case-insensitive shape (the AWS name) are looked for in the
# case-folded value; the others as one case-sensitive alternation, which the engine searches at
# C speed. (One case-insensitive alternation of them all cost 0.7 s on a 3 MiB value: the engine
# gives up its prefix scan under IGNORECASE and tries every alternative at every position.)
_CASED = re.compile(
    "|".join(re.escape(lit) for _, lits, p in SHAPES if "(?i" not in p for lit in lits)
)
_FOLDED = tuple(lit.casefold() for _, lits, p in SHAPES if "(?i" in p for lit in lits)
HINT = "put the value in a Secret and reference it (env[].valueFrom.secretKeyRef), never inline"


Kinds = dict[int, str]  # id() of a string in the walked object -> the credential it holds


def credential_kind(value: str) -> str | None:
    """What kind of credential `value` contains (the leftmost one), or None. Linear in the
    length of `value`: each shape is one search that tries its pattern only where its literal is."""
    if not _may_hold(value):
        return None
    found = [
        (match.start(), index)
        for index, pattern in enumerate(_PATTERNS)
        if (match := pattern.search(value)) is not None
    ]
    return SHAPES[min(found)[1]][0] if found else None


def _may_hold(value: str) -> bool:
    """Whether `value` holds a literal of some shape (casefold() folds at least what the
    shapes' IGNORECASE does, e.g. U+017F to s, so no match is ruled out)."""
    if _CASED.search(value) is not None:
        return True
    folded = value.casefold()
    return any(lit in folded for lit in _FOLDED)


def find_credentials(obj: Any, at: FieldPath | None = None) -> list[FieldError]:
    """Every string in `obj` (mappings, lists and scalars, any depth; map keys too) that looks
    like a credential, as a FieldError naming its field. Iterative, so no nesting depth can
    raise. Each string is searched once: a first walk without paths finds the strings that hold
    a credential (the common answer is none), the walk that builds paths only looks them up."""
    kinds = _credential_strings(obj)
    if kinds is None:
        return []
    errors: list[FieldError] = []
    stack: list[tuple[Any, FieldPath]] = [(obj, at if at is not None else FieldPath())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            kind = kinds.get(id(value))
            if kind is not None:
                errors.append(FieldError(str(path), Reason.FORBIDDEN, f"looks like {kind}; {HINT}"))
        elif isinstance(value, Mapping):
            errors += _mapping_credentials(value, path, kinds)
            stack.extend(
                (v, path.child(_shown(k, kinds))) for k, v in reversed(list(value.items()))
            )
        elif isinstance(value, list | tuple):
            stack.extend((v, path.index(i)) for i, v in reversed(list(enumerate(value))))
    return errors


def _mapping_credentials(
    value: Mapping[Any, Any], path: FieldPath, kinds: Kinds
) -> list[FieldError]:
    """A key that is a credential, and an AWS secret access key its name gives away (an env
    entry {name, value} or a key of that name)."""
    errors = []
    for key in value:
        kind = _key_kind(key, kinds)
        if kind is not None:
            at = path.key(KEY_SHOWN)
            errors.append(FieldError(str(at), Reason.FORBIDDEN, f"a key looks like {kind}; {HINT}"))
    for at, name, secret in _named_values(value, path, kinds):
        if _AWS_SECRET_NAME.fullmatch(name) and _AWS_SECRET_VALUE.fullmatch(secret):
            errors.append(FieldError(str(at), Reason.FORBIDDEN, f"looks like {AWS_SECRET}; {HINT}"))
    return errors


def _named_values(
    value: Mapping[Any, Any], path: FieldPath, kinds: Kinds
) -> list[tuple[FieldPath, str, str]]:
    found = [
        (path.child(_shown(k, kinds)), str(k), v) for k, v in value.items() if isinstance(v, str)
    ]
    name, secret = value.get("name"), value.get("value")
    if isinstance(name, str) and isinstance(secret, str):
        found.append((path.child("value"), name, secret))
    return found


def _key_kind(key: Any, kinds: Kinds) -> str | None:
    """The credential a map key holds: string keys were searched by the first walk."""
    return kinds.get(id(key)) if isinstance(key, str) else credential_kind(str(key))


def _shown(key: Any, kinds: Kinds) -> str:
    return KEY_SHOWN if _key_kind(key, kinds) is not None else str(key)


def _credential_strings(obj: Any) -> Kinds | None:
    """The first walk: the strings in `obj` (values and keys) that hold a credential, by id
    (every one stays alive in `obj` for the call), or None when nothing in `obj` is a credential,
    an AWS secret access key by name included. A string met twice (a YAML alias) is searched
    once. The common answer, none, costs one literal search of all the strings together
    (separated by NUL, which no literal holds) instead of one per string."""
    strings: list[str] = []
    searched: set[int] = set()
    named = False
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str or (kind is not dict and kind is not list and isinstance(value, str)):
            if id(value) not in searched:
                searched.add(id(value))
                strings.append(value)
        elif kind is dict or isinstance(value, Mapping):
            named = named or any(
                isinstance(v, str) and len(v) == 40 and _is_named_secret(k, v)
                for k, v in _pairs(value)
            )
            stack.extend(value.values())
            stack.extend(k for k in value if isinstance(k, str))
        elif kind is list or isinstance(value, list | tuple):
            stack.extend(value)
    if not _may_hold("\0".join(strings)):
        return {} if named else None
    kinds: Kinds = {}
    for value in strings:
        found = credential_kind(value)
        if found is not None:
            kinds[id(value)] = found
    return kinds if kinds or named else None


def _pairs(value: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    pairs = list(value.items())
    if "name" in value and "value" in value:
        pairs.append((value["name"], value["value"]))
    return pairs


def _is_named_secret(name: Any, secret: Any) -> bool:
    return (
        isinstance(name, str)
        and isinstance(secret, str)
        and len(secret) == 40
        and _AWS_SECRET_NAME.fullmatch(name) is not None
        and _AWS_SECRET_VALUE.fullmatch(secret) is not None
    )


def redact(text: str) -> str:
    """`text` with every credential in it replaced by <redacted> (for messages built from keys
    and values elsewhere). Linear like credential_kind; `text` itself when it holds none."""
    if not _may_hold(text):
        return text
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def redact_errors(errors: Sequence[FieldError]) -> tuple[FieldError, ...]:
    """Every error with its path and detail redacted."""
    return tuple(FieldError(redact(e.path), e.reason, redact(e.detail)) for e in errors)
