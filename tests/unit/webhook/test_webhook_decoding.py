"""Decoding a review's body (webhook.review._decode_json) as json.loads decodes it with the same
options, the reference: the same value, or an error where it raises one, over generated JSON
in every encoding json.loads detects, byte strings that are not JSON, and the constants and
numbers the webhook refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.review import _decode_json, _finite_float, _no_constant, decode_review

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "utf-16", "utf-32-le", "utf-32-be"]


def reference(body: bytes) -> tuple[str, Any]:
    try:
        return "ok", json.loads(body, parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as err:
        return "error", type(err)


def ours(body: bytes) -> tuple[str, Any]:
    try:
        return "ok", _decode_json(body)
    except (ValueError, RecursionError) as err:
        return "error", type(err)


def same_json(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] == "ok" and b[0] == "ok":
        return json.dumps(a[1]) == json.dumps(b[1])
    return a == b


@settings(max_examples=500, deadline=None)
@given(value=VALUES, encoding=st.sampled_from(ENCODINGS))
def test_json_in_any_detected_encoding_decodes_as_json_loads_does(
    value: Any, encoding: str
) -> None:
    body = json.dumps(value, ensure_ascii=False).encode(encoding, "surrogatepass")
    assert same_json(ours(body), reference(body))


@settings(max_examples=500, deadline=None)
@given(body=st.binary(max_size=40))
def test_any_bytes_decode_or_fail_as_json_loads_does(body: bytes) -> None:
    assert same_json(ours(body), reference(body))


@pytest.mark.parametrize(
    "body",
    [
        b"NaN",
        b"[Infinity]",
        b"-Infinity",
        b"1e400",
        b"[1.5, -0.0]",
        b"\xef\xbb\xbf{}",
        b'"\\ud800"',
    ],
    ids=["nan", "infinity", "minus-infinity", "too-large", "floats", "bom", "lone-surrogate"],
)
def test_refused_constants_and_numbers_decode_as_json_loads_does(body: bytes) -> None:
    assert same_json(ours(body), reference(body))


def test_a_review_decodes_to_its_request() -> None:
    body = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u",
                "kind": {"group": "g", "version": "v", "kind": "K"},
                "operation": "CREATE",
                "object": {"a": [1, 2.5]},
            },
        }
    ).encode("utf-16")

    assert decode_review(body, "application/json") == {
        "uid": "u",
        "kind": {"group": "g", "version": "v", "kind": "K"},
        "operation": "CREATE",
        "object": {"a": [1, 2.5]},
    }
