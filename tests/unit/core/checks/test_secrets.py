"""The credential detector shared by admission and the renderer's pre-commit scan."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.checks.credentials import (
    HINT,
    SHAPES,
    _credential_strings,  # the first walk itself, held to searching each string
    credential_kind,
    find_credentials,
)
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath

# Shapes only: generated from the documented prefixes, none of them a real credential.
TOKENS = {
    "hf": "hf_" + "aB3" * 12,
    "openai": "sk-proj-" + "Ab1x" * 10,
    "anthropic": "sk-ant-api03-" + "Zy9_" * 10,
    "github": "ghp_" + "a1B2" * 9,
    "github-pat": "github_pat_" + "11AAAA" * 12,
    "gitlab": "glpat-" + "x1Y2z3" * 4,
    "aws": "AKIA" + "ABCDEFGH23456789",
    "google": "AIza" + "S" * 35,
    "slack": "xoxb-" + "123456789012-abcdef",
    "stripe": "sk_live_" + "4eC39Hq" * 4,
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n",
    "pem-openssh": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXZhbHVl",
    "url": "https://user:s3cret@example.com/repo.git",
}

NOT_CREDENTIALS = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "task-classification-model-with-a-long-name",
    "risk-assessment-model-with-a-long-name-0123",
    "hf-token",
    "hf_token",
    "hf-secret-name",
    "--max-model-len=8192",
    "https://huggingface.co/meta-llama/Llama-3.1-8B",
    "http://localhost:8000/v1",
    "sk-short1",
    "eyJhbGciOiJIUzI1NiJ9",  # a JWT header alone is not a token
    "-----BEGIN CERTIFICATE-----",
    "ASKIA1234",
    "",
]


@pytest.mark.parametrize("value", list(TOKENS.values()), ids=list(TOKENS))
def test_each_credential_shape_is_found(value: str) -> None:
    assert credential_kind(value) is not None
    assert credential_kind(f"prefix {value} suffix") is not None


@pytest.mark.parametrize("value", NOT_CREDENTIALS)
def test_ordinary_values_are_not_credentials(value: str) -> None:
    assert credential_kind(value) is None


def test_errors_name_the_field_and_never_echo_the_value() -> None:
    obj = {
        "metadata": {"annotations": {"airunway.ai/token": TOKENS["github"]}},
        "spec": {
            "secrets": {"huggingFaceToken": TOKENS["hf"]},
            "env": [{"name": "A", "value": "plain"}, {"name": "B", "value": TOKENS["openai"]}],
            "args": ["--x", TOKENS["jwt"]],
            "replicas": 3,
        },
    }

    errors = find_credentials(obj)

    assert errors == [
        FieldError(
            "metadata.annotations[airunway.ai/token]",
            Reason.FORBIDDEN,
            f"looks like a GitHub token (ghp_/gho_/ghu_/ghs_/ghr_...); {HINT}",
        ),
        FieldError(
            "spec.secrets.huggingFaceToken",
            Reason.FORBIDDEN,
            f"looks like a Hugging Face token (hf_...); {HINT}",
        ),
        FieldError(
            "spec.env[1].value",
            Reason.FORBIDDEN,
            f"looks like an OpenAI/Anthropic-style API key (sk-...); {HINT}",
        ),
        FieldError(
            "spec.args[1]",
            Reason.FORBIDDEN,
            f"looks like a JSON Web Token; {HINT}",
        ),
    ]
    assert not any(v in str(e) for e in errors for v in TOKENS.values())


def test_deep_nesting_does_not_recurse() -> None:
    obj: object = TOKENS["aws"]
    for _ in range(5000):
        obj = {"a": [obj]}

    errors = find_credentials(obj)

    assert len(errors) == 1 and errors[0].detail.startswith("looks like an AWS access key id")


_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-_./:@ ", max_size=60)


@settings(max_examples=200, deadline=None)
@given(before=_TEXT, after=_TEXT, which=st.sampled_from(sorted(TOKENS)))
def test_a_credential_is_found_wherever_it_sits_in_a_value(
    before: str, after: str, which: str
) -> None:
    value = f"{before} {TOKENS[which]} {after}"

    assert credential_kind(value) is not None
    assert [e.path for e in find_credentials({"spec": {"env": [{"value": value}]}})] == [
        "spec.env[0].value"
    ]


# Values at the size limit of a request (3 MiB): the scan is linear, so each answer is one pass.
# The URL shape once started at every letter of a run and rescanned the rest of it: this value
# took hours (64 KB of it took 6 s).
LIMIT = 3 * 1024 * 1024
EVERY_LITERAL = " ".join(lit for _, literals, _ in SHAPES for lit in literals) + " @"


@pytest.mark.parametrize(
    ("run", "credential"),
    [
        ("a", None),
        ("a.", None),
        ("hf_", None),
        ("eyJaaaaaaaa.eyJaaaaaaaa ", None),
        ("a", "url"),
        ("gh ", "github"),
    ],
    ids=["letters", "scheme-characters", "literals", "jwt-parts", "letters-then-url", "dense"],
)
def test_a_value_at_the_request_size_limit_is_scanned_in_one_pass(
    run: str, credential: str | None
) -> None:
    tail = f" {EVERY_LITERAL} {TOKENS[credential]}" if credential else f" {EVERY_LITERAL}"
    value = run * ((LIMIT - len(tail)) // len(run)) + tail

    expected = credential_kind(TOKENS[credential]) if credential else None
    assert credential_kind(value) == expected


def test_every_shape_but_the_url_starts_with_its_literal_then_looks_behind() -> None:
    """What keeps the scan linear: the engine looks for the literal, and tries the pattern only
    where it is; the URL's scheme comes first, so it starts only where a run starts."""
    for name, literals, pattern in SHAPES:
        if name.startswith("a password in a URL"):
            assert pattern.startswith("(?<![a-z0-9+.-])")
            continue
        if name.startswith("an AWS secret access key"):
            # Its name in any case: a fixed 17-character prefix fails within a character or
            # two everywhere else (and may sit inside a longer name: my_secret_access_key=).
            assert pattern.startswith("(?i:secret[_-]access[_-]key)")
            continue
        lead = re.match(r"[\w-]+", pattern)
        assert lead is not None and all(lit.startswith(lead.group()) for lit in literals), name
        if name != "a private key (PEM)":  # "-----BEGIN " cannot sit inside a word
            assert "(?<!" in pattern, name


def _unfiltered_kind(value: str) -> str | None:
    """credential_kind without its literal pre-filter: every shape searched."""
    found = [
        (match.start(), index)
        for index, (_, _, pattern) in enumerate(SHAPES)
        if (match := re.search(pattern, value)) is not None
    ]
    return SHAPES[min(found)[1]][0] if found else None


# Pieces of every shape, the AWS name in cases and in the characters IGNORECASE folds to it
# (U+017F long s, U+212A Kelvin), so that the generated values come near every shape.
_PIECES = st.sampled_from(
    [lit for _, literals, _ in SHAPES for lit in literals]
    + [
        "SECRET_ACCESS_KEY=",
        "secret-access-key: ",
        "Secret_Acce\u017f\u017f_Key=",
        "secret_access_\u212aey=",
        "A" * 40,
        "aB3/" * 10,
        "a1B2" * 9,
        "://u:p@",
        "-",
        "_",
        " ",
        "x",
    ]
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(_PIECES, max_size=12))
def test_the_literal_prefilter_never_hides_a_credential(parts: list[str]) -> None:
    value = "".join(parts)

    assert credential_kind(value) == _unfiltered_kind(value)


def test_each_string_of_an_object_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 MiB value holding a token was searched twice per walk (1.5 s at the input limits);
    the walk that names fields only looks up what the first walk found."""
    from core.checks import credentials  # noqa: PLC0415

    searched: list[str] = []
    real = credentials.credential_kind

    def counted(value: str) -> str | None:
        searched.append(value)
        return real(value)

    monkeypatch.setattr(credentials, "credential_kind", counted)
    token = TOKENS["github"]
    obj = {"env": [{"name": "HF", "value": token}], "notes": token + " x", token: "k"}

    errors = credentials.find_credentials(obj, FieldPath.root("spec"))

    # The token is one string object, met as a value and as a key: searched once.
    assert sorted(searched) == sorted(
        ["env", "name", "HF", "value", token, "notes", token + " x", "k"]
    )
    assert [e.path for e in errors] == ["spec[<credential>]", "spec.env[0].value", "spec.notes"]


def _kinds_one_by_one(obj: object) -> dict[int, str] | None:
    """What the first walk answered when it searched each string on its own (the reference of
    the search of all strings together): id of each string holding a credential -> its kind,
    None when nothing holds one, an AWS secret access key by name included."""
    kinds: dict[int, str] = {}
    named = False
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            kind = credential_kind(value)
            if kind is not None:
                kinds[id(value)] = kind
        elif isinstance(value, dict):
            pairs = list(value.items())
            if "name" in value and "value" in value:
                pairs.append((value["name"], value["value"]))
            named = named or any(
                isinstance(k, str)
                and isinstance(v, str)
                and len(v) == 40
                and re.fullmatch(r"(?:.*[_-])?(?:AWS[_-])?SECRET[_-]ACCESS[_-]KEY", k, re.I)
                and re.fullmatch(r"[A-Za-z0-9/+]{40}", v)
                for k, v in pairs
            )
            stack.extend(value.values())
            stack.extend(k for k in value if isinstance(k, str))
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return kinds if kinds or named else None


_CREDENTIAL_PIECES = st.lists(
    _PIECES | st.sampled_from(sorted(TOKENS.values())) | st.text(max_size=4), max_size=4
).map("".join)
_OBJECTS = st.recursive(
    _CREDENTIAL_PIECES | st.integers() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            _CREDENTIAL_PIECES | st.sampled_from(["name", "value", "AWS_SECRET_ACCESS_KEY"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(obj=_OBJECTS)
def test_searching_all_strings_together_finds_what_searching_each_finds(obj: object) -> None:
    assert _credential_strings(obj) == _kinds_one_by_one(obj)
