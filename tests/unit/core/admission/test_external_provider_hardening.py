"""Issue 13, class 3 (URLs and names) for ExternalModelProvider, and the requested-by annotation:
strict baseURL parsing (never an exception), whole-string name matching, attribution immutable."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.configs import REQUESTED_BY, check_external_provider
from core.admission.pipeline import admit
from core.fields.errors import Reason
from core.model.servednames import LITERAL
from core.model.urls import url_problem
from core.selection.configs import ProviderRegistry
from tests.support.builders import external_model_provider, model_deployment

PORT = "port must be a number from 1 to 65535"
CONTROL = "must not contain whitespace or control characters"


def errors_of(
    obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in check_external_provider(obj, old)]


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        ("http://[::1", "has an IPv6 address without its closing ]"),
        ("http://[::1]x/v1", PORT),
        ("http://[nope]/v1", "host [nope] is not an IPv6 address"),
        ("http://api.example.com:0/v1", PORT),
        ("http://api.example.com:-1/v1", PORT),
        ("http://api.example.com:65536/v1", PORT),
        ("http://api.example.com:99999/v1", PORT),
        ("http://api.example.com:abc/v1", PORT),
        ("http://api.example.com:/v1", PORT),
        ("ht\ntp://api.example.com/v1", CONTROL),
        ("http://api.exa\tmple.com/v1", CONTROL),
        ("http://api.example.com/v1\n", CONTROL),
        ("http://api.example.com/v 1", CONTROL),
        ("http://api.example.com/v1\x7f", CONTROL),
        (
            "http://api_example.com/v1",
            'host "api_example.com" is not a DNS name or an IPv4 address',
        ),
        (
            "http://-api.example.com/v1",
            'host "-api.example.com" is not a DNS name or an IPv4 address',
        ),
        ("http://:8080/v1", "must be an http:// or https:// URL with a host"),
        (
            "http://bücher.example/v1",
            "must be ASCII (write an internationalised host in its xn-- form)",
        ),
        ("https://api.example.com/v1#frag", "must not have a query or a fragment"),
        ("https://api.example.com/v1?", "must not have a query or a fragment"),
    ],
    ids=[
        "ipv6-unclosed",
        "ipv6-junk-after",
        "ipv6-not-an-address",
        "port-0",
        "port-negative",
        "port-65536",
        "port-99999",
        "port-abc",
        "port-empty",
        "newline-in-scheme",
        "tab-in-host",
        "trailing-newline",
        "space",
        "delete-char",
        "underscore-host",
        "hyphen-first",
        "no-host",
        "non-ascii",
        "fragment",
        "empty-query",
    ],
)
def test_bad_base_urls_are_denied_with_a_reason(url: str, detail: str) -> None:
    obj = external_model_provider(baseURL=url)

    assert errors_of(obj) == [("spec.baseURL", Reason.INVALID, detail)]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "http://127.0.0.1:8080/v1",
        "http://[::1]:8080/v1",
        "http://[::1]/v1",
        "https://api.example.com:1/v1",
        "https://api.example.com:65535",
        "http://llama.models.svc.cluster.local.:8000/v1",
    ],
)
def test_good_base_urls_parse(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "https://api.example.com:1/v1",
        "https://api.example.com:65535",
        "https://api.example.com./v1",
        "http://8.8.8.8/v1",
        "http://[2001:4860:4860::8888]/v1",
    ],
)
def test_public_base_urls_are_admitted(url: str) -> None:
    assert errors_of(external_model_provider(baseURL=url)) == []


@pytest.mark.parametrize(
    "name", ["gpt-4o\n", "gpt-4o\n\n", "\ngpt-4o", "gpt 4o", "gpt-4o\t"], ids=repr
)
def test_served_names_match_as_whole_strings(name: str) -> None:
    obj = external_model_provider(models=[{"servedName": "gpt-4o"}, {"servedName": name}])

    assert errors_of(obj) == [
        (
            "spec.models[1].servedName",
            Reason.INVALID,
            LITERAL,
        )
    ]


def test_secret_reference_is_a_secret_name_and_key() -> None:
    obj = external_model_provider(credentialsSecretRef={"name": "Key\n", "key": "api key"})

    assert errors_of(obj) == [
        ("spec.credentialsSecretRef.name", Reason.INVALID, "must be a Secret name (DNS subdomain)"),
        (
            "spec.credentialsSecretRef.key",
            Reason.INVALID,
            "must be a key of a Secret's data: letters, digits and - . _",
        ),
    ]


def _annotated(value: str | None) -> dict[str, Any]:
    obj = external_model_provider()
    if value is not None:
        obj["metadata"]["annotations"] = {REQUESTED_BY: value}
    return obj


@pytest.mark.parametrize(
    ("before", "after"),
    [("alice", "mallory"), ("alice", None), (None, "mallory")],
    ids=["changed", "removed", "added"],
)
def test_requested_by_cannot_change_after_create(before: str | None, after: str | None) -> None:
    assert errors_of(_annotated(after), old=_annotated(before)) == [
        (
            "metadata.annotations[gateway.tokenfactory.mirantis.com/requested-by]",
            Reason.IMMUTABLE,
            "is set when the provider is created and cannot be added, changed or removed later",
        )
    ]


def test_requested_by_is_free_at_create_and_kept_on_update() -> None:
    assert errors_of(_annotated("alice")) == []
    assert errors_of(_annotated("alice"), old=_annotated("alice")) == []


# The property: any string as baseURL gets an answer (never an exception), and an accepted URL has
# no control character or whitespace anywhere and a port (if any) inside 1..65535.
URL_ALPHABET = string.ascii_letters + string.digits + ":/[]@?#.-_%\t\n\r \x00\x7f"


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=URL_ALPHABET, max_size=40),
        st.builds(
            "{}://{}{}{}".format,
            st.sampled_from(["http", "https", "ht\ntp", "ftp", ""]),
            st.text(alphabet=URL_ALPHABET, max_size=20),
            st.one_of(st.just(""), st.integers(-99999, 999999).map(lambda p: f":{p}")),
            st.sampled_from(["", "/v1", "/v1\n", "?q", "/\tx"]),
        ),
        st.text(max_size=30),
    )
)
def test_any_base_url_gets_an_answer_and_accepted_ones_are_clean(url: str) -> None:
    errors = check_external_provider(external_model_provider(baseURL=url))

    if url == "":
        assert [(e.path, e.reason) for e in errors] == [("spec.baseURL", Reason.INVALID)]
        return
    assert [e.path for e in errors] in ([], ["spec.baseURL"])
    if not errors:
        assert url_problem(url) is None
        assert not any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url)
        assert url.startswith(("http://", "https://"))
        hostport = url.split("/", 3)[2]
        if not hostport.startswith("[") and ":" in hostport:
            assert 1 <= int(hostport.rsplit(":", 1)[1]) <= 65535


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_any_served_name_gets_an_answer_and_accepted_ones_have_no_whitespace(name: str) -> None:
    obj = external_model_provider(models=[{"servedName": name}])

    errors = errors_of(obj)

    assert [e[0] for e in errors] in ([], ["spec.models[0].servedName"])
    if not errors:
        assert name and not any(c.isspace() for c in name)
        assert name.isascii()


def test_engine_argument_names_match_as_whole_strings(shipped: ProviderRegistry) -> None:
    """A `$` anchor let "max-model-len\\n" through as an argument name (then a broken flag)."""
    obj = model_deployment(
        gpu=1, provider="vllm", engine={"type": "vllm", "args": {"max-model-len\n": "4096"}}
    )

    errors = admit(obj, registry=shipped).errors

    assert [(e.path, e.reason) for e in errors] == [
        ("spec.engine.args[max-model-len\n]", Reason.INVALID)
    ]
