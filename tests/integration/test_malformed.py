"""Malformed requests: always a well-formed answer, never a 500 or a traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import model_deployment
from tests.support.framing import Framing, malformed_chunked, valid_chunked
from tests.support.webhook import Webhook, review

VALID = review(model_deployment(gpu=1), uid="abc")


def with_request(**changes: Any) -> bytes:
    document = json.loads(json.dumps(VALID))
    for key, value in changes.items():
        if value is None:
            document["request"].pop(key)
        else:
            document["request"][key] = value
    return json.dumps(document).encode()


def nested(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (b"{not json", "application/json", "body is not valid JSON (or is nested too deeply)"),
        (b"", "application/json", "body is not valid JSON (or is nested too deeply)"),
        (b'{"kind": "Pod"}', "application/json", "body is not an AdmissionReview"),
        (b"[1, 2]", "application/json", "body is not an AdmissionReview"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "application/json",
            "AdmissionReview has no request",
        ),
        (with_request(uid=None), "application/json", "AdmissionReview has no request with a uid"),
        (
            json.dumps(VALID).encode(),
            "text/plain",
            "content type must be application/json, not text/plain",
        ),
        (json.dumps(VALID).encode(), None, "content type must be application/json, not none"),
        (nested(100_000), "application/json", "body is not valid JSON (or is nested too deeply)"),
    ],
    ids=[
        "invalid-json",
        "empty",
        "not-a-review",
        "array",
        "no-request",
        "no-uid",
        "wrong-content-type",
        "no-content-type",
        "deeply-nested-json",
    ],
)
def test_unreadable_requests_get_a_400_json_error(
    body: bytes, content_type: str | None, error: str, webhook: Webhook
) -> None:
    status, answer = webhook.request("POST", "/validate", body, content_type)

    assert (status, json.loads(answer)) == (400, {"error": error})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (with_request(object=None), "request.object must be an object"),
        (with_request(object=[1, 2]), "request.object must be an object or null"),
        (
            with_request(operation="PATCH"),
            "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT",
        ),
        (with_request(kind="ModelDeployment"), "request.kind must have group, version and kind"),
        (with_request(operation="UPDATE"), "request.oldObject must be an object on UPDATE"),
        (
            json.dumps(VALID | {"apiVersion": "admission.k8s.io/v1beta1"}).encode(),
            "apiVersion must be admission.k8s.io/v1",
        ),
    ],
    ids=[
        "missing-object",
        "object-not-object",
        "bad-operation",
        "bad-kind",
        "update-without-old",
        "v1beta1",
    ],
)
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
def test_requests_with_a_uid_get_a_denying_admission_response(
    body: bytes, message: str, path: str, webhook: Webhook
) -> None:
    status, answer = webhook.request("POST", path, body)

    assert status == 200
    assert json.loads(answer) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "abc", "allowed": False, "status": {"code": 400, "message": message}},
    }


def test_oversized_body_is_refused_before_parsing(webhook: Webhook) -> None:
    padding = "x" * (3 * 1024 * 1024 + 1)
    body = json.dumps(
        review(model_deployment(gpu=1, podTemplate={"metadata": {"annotations": {"pad": padding}}}))
    ).encode()

    status, answer = webhook.request("POST", "/mutate", body)

    assert (status, json.loads(answer)) == (
        400,
        {"error": "request body larger than 3145728 bytes"},
    )


def test_deeply_nested_overrides_are_denied_not_crashed(webhook: Webhook) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(800):
        node["x"] = {}
        node = node["x"]
    document = review(model_deployment(gpu=1, provider="dynamo", overrides={"spec": deep}))

    for path in ("/mutate", "/validate"):
        response = webhook.admit(path, document)
        assert response == {
            "uid": "uid-1",
            "allowed": False,
            "status": {
                "code": 403,
                "message": "spec: Invalid value: nested deeper than 100 levels",
            },
        }


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/mutate", 405), ("PUT", "/validate", 405), ("POST", "/nope", 404), ("GET", "/", 404)],
)
def test_wrong_routes_and_methods_get_json_errors(
    method: str, path: str, status: int, webhook: Webhook
) -> None:
    code, answer = webhook.request(method, path, b"{}")

    assert code == status
    assert set(json.loads(answer)) == {"error"}


FRAMED = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CHUNKED_REVIEW = json.dumps(VALID).encode()


@FRAMED
@given(framing=malformed_chunked("/validate", CHUNKED_REVIEW))
def test_every_chunked_framing_error_gets_a_400_naming_it(
    framing: Framing, webhook: Webhook
) -> None:
    status, headers, body = webhook.raw(framing.data)

    answer = json.loads(body)
    assert (status, headers["connection"], set(answer)) == (400, "close", {"error"})
    assert answer["error"].startswith(f"malformed request: {framing.error}: "), framing.defect


@FRAMED
@given(framing=valid_chunked("/validate", CHUNKED_REVIEW))
def test_any_valid_chunking_of_a_review_is_answered(framing: Framing, webhook: Webhook) -> None:
    status, _, body = webhook.raw(framing.data)

    assert (status, json.loads(body)["response"]) == (200, {"uid": "abc", "allowed": True})


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
            "malformed request: UnsupportedTransferCoding: Unsupported transfer coding: 'xchunked'",
        ),
        (
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            "malformed request: InvalidHeader: Invalid HTTP Header: 'CONTENT-LENGTH'",
        ),
        (
            b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "malformed request: InvalidChunkSize: Invalid chunk size: b'zz'",
        ),
        (
            # The last chunk never comes: answered when the read deadline (5 s) passes.
            b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nff\r\n{}",
            "request body ended before its last chunk",
        ),
    ],
    ids=["xchunked", "negative-length", "chunk-size-not-hex", "body-ends-early"],
)
def test_framing_errors_get_a_json_400_and_the_connection_closes(
    data: bytes, error: str, webhook: Webhook
) -> None:
    status, headers, body = webhook.raw(data)

    assert (status, headers["connection"], json.loads(body)) == (400, "close", {"error": error})


@pytest.mark.parametrize(
    ("data", "status", "error"),
    [
        (
            b"POST /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            414,
            "LimitRequestLine: Request Line is too large (5015 > 4094)",
        ),
        (
            b"POST /validate HTTP/1.1\r\n"
            + b"".join(b"X-%d: y\r\n" % i for i in range(101))
            + b"\r\n",
            431,
            "LimitRequestHeaders: limit request headers fields",
        ),
        (
            b"POST /validate HTTP/1.1\r\nX-A: " + b"y" * 9000 + b"\r\n\r\n",
            431,
            "LimitRequestHeaders: limit request headers fields size",
        ),
    ],
    ids=["request-line-too-long", "too-many-headers", "header-too-large"],
)
def test_oversized_request_heads_get_their_4xx(
    data: bytes, status: int, error: str, webhook: Webhook
) -> None:
    answer = webhook.raw(data)

    assert (answer[0], answer[1]["connection"], json.loads(answer[2])) == (
        status,
        "close",
        {"error": f"malformed request: {error}"},
    )


@FRAMED
@given(head=st.binary(max_size=300))
def test_any_bytes_as_a_request_head_get_a_4xx(head: bytes, webhook: Webhook) -> None:
    status, _, _ = webhook.raw(head + b"\r\n\r\n")

    assert 400 <= status < 500


def test_nothing_above_produced_a_server_error_or_a_traceback(webhook: Webhook) -> None:
    assert "Traceback" not in webhook.log_text()
    assert " 500 " not in webhook.log_text()
    assert " 501 " not in webhook.log_text()
