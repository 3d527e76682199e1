"""The AdmissionReview v1 wire format, and decoding that never raises."""

from __future__ import annotations

import functools
import gc
import json
import math
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

API_VERSION = "admission.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class AdmissionRequest(TypedDict, total=False):
    uid: str
    kind: GroupVersionKind
    subResource: str
    name: str
    namespace: str
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    object: dict[str, Any]
    oldObject: dict[str, Any] | None
    dryRun: bool
    userInfo: dict[str, Any]  # who asked: username, uid, groups, extra (webhook/access.py)


class Status(TypedDict, total=False):
    code: int
    message: str


class AdmissionResponse(TypedDict, total=False):
    uid: str
    allowed: bool
    status: Status
    patch: str
    patchType: Literal["JSONPatch"]
    warnings: list[str]


class AdmissionReview(TypedDict):
    apiVersion: str
    kind: Literal["AdmissionReview"]
    response: AdmissionResponse


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Why a request could not be used; `uid` when one could still be read (then it is answered)."""

    message: str
    uid: str | None = None


def decode_review(body: bytes, content_type: str | None) -> AdmissionRequest | Undecodable:
    """The request of an AdmissionReview v1 body, or why it is not one."""
    if (content_type or "").split(";")[0].strip().lower() != "application/json":
        return Undecodable(f"content type must be application/json, not {content_type or 'none'}")
    try:
        review = _decode_json(body)
    except (ValueError, RecursionError):
        return Undecodable("body is not valid JSON (or is nested too deeply)")
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        return Undecodable("body is not an AdmissionReview")
    request = review.get("request")
    if not isinstance(request, dict):
        return Undecodable("AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return Undecodable("AdmissionReview has no request with a uid")
    if review.get("apiVersion") != API_VERSION:
        return Undecodable(f"apiVersion must be {API_VERSION}", uid)
    return _check_request(request, uid)


def _check_request(request: dict[str, Any], uid: str) -> AdmissionRequest | Undecodable:
    operation = request.get("operation")
    if operation not in OPERATIONS:
        return Undecodable(f"request.operation must be one of {', '.join(OPERATIONS)}", uid)
    kind = request.get("kind")
    if not isinstance(kind, dict) or not all(
        isinstance(kind.get(k), str) for k in ("group", "version", "kind")
    ):
        return Undecodable("request.kind must have group, version and kind", uid)
    # Every field a handler or the log line reads is checked here, for every operation: a DELETE
    # or CONNECT whose object is a list or a string is as unusable as a CREATE without one.
    for name in ("object", "oldObject"):
        if request.get(name) is not None and not isinstance(request[name], dict):
            return Undecodable(f"request.{name} must be an object or null", uid)
    if operation in ("CREATE", "UPDATE") and request.get("object") is None:
        return Undecodable("request.object must be an object", uid)
    if operation == "UPDATE" and request.get("oldObject") is None:
        return Undecodable("request.oldObject must be an object on UPDATE", uid)
    for name, kind_of in (
        ("subResource", str),
        ("name", str),
        ("namespace", str),
        ("dryRun", bool),
    ):
        if request.get(name) is not None and not isinstance(request[name], kind_of):
            return Undecodable(f"request.{name} must be a {_TYPE_NAMES[kind_of]}", uid)
    decoded: AdmissionRequest = request  # type: ignore[assignment]  # shape checked above
    return decoded


_TYPE_NAMES = {str: "string", bool: "boolean"}


def _decode_json(body: bytes) -> Any:
    """json.loads with the garbage collector paused. A 3 MiB body decodes into up to a million
    lists and dicts, and decoding makes no reference cycles, so the collections those
    allocations trigger (the young generations over and over, then the whole heap as it grows)
    find nothing: they cost twice the decoding itself (3 MiB of empty lists: 240 ms of CPU, 95 ms
    paused). Pausing is process-wide; a thread that finishes decoding first re-enables it for
    one still decoding, which costs only the collections saved (nothing else here disables it)."""
    gc.disable()
    try:
        # json.loads(body, ...) as it decodes bytes, with a decoder built once (json.loads
        # builds one, and its scanner, on every call given options: a quarter of the decoding
        # of a review)
        return _decoder().decode(body.decode(json.detect_encoding(body), "surrogatepass"))
    finally:
        gc.enable()


@functools.cache
def _decoder() -> json.JSONDecoder:
    return json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity (Python's decoder accepts them; the API server's does not)."""
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A float, refusing literals too large for a float64 (1e400), as Go's decoder does."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value
