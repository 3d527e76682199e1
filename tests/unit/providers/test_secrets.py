"""The credential detector shared by admission and the renderer's pre-commit scan."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.errors import FieldError, Reason
from providers.secrets import HINT, credential_kind, find_credentials

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
