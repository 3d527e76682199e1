"""The only place AdmissionResponses are built: allowed, denied, patched; and the review wrapper."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from core.admission.pipeline import json_patch
from core.admission.verdict import Problem
from webhook.review import API_VERSION, AdmissionResponse, AdmissionReview

FORBIDDEN = 403  # a policy denial: the object is understood and refused
BAD_REQUEST = 400  # the request itself is unusable


def allowed(uid: str, warnings: Sequence[str] = ()) -> AdmissionResponse:
    response: AdmissionResponse = {"uid": uid, "allowed": True}
    if warnings:
        response["warnings"] = list(warnings)
    return response


def denied(
    uid: str,
    errors: Sequence[Problem] | str,
    *,
    code: int = FORBIDDEN,
    warnings: Sequence[str] = (),
) -> AdmissionResponse:
    """A denial whose message lists every field error, in check order."""
    message = errors if isinstance(errors, str) else "; ".join(str(e) for e in errors)
    response: AdmissionResponse = {
        "uid": uid,
        "allowed": False,
        "status": {"code": code, "message": message},
    }
    if warnings:
        response["warnings"] = list(warnings)
    return response


def patched(
    uid: str, before: Mapping[str, Any], after: Mapping[str, Any], warnings: Sequence[str] = ()
) -> AdmissionResponse:
    """Allowed, with the JSONPatch from `before` to `after` (left out when they are equal)."""
    return patched_with(uid, json_patch(before, after), warnings)


def patched_with(
    uid: str, ops: Sequence[Mapping[str, Any]], warnings: Sequence[str] = ()
) -> AdmissionResponse:
    """Allowed, with the JSONPatch `ops` (left out when there are none)."""
    response = allowed(uid, warnings)
    if ops:
        response["patch"] = base64.b64encode(compact_json(ops)).decode()
        response["patchType"] = "JSONPatch"
    return response


def compact_json(value: Any) -> bytes:
    """A JSON value as compact JSON (UTF-8): the patch, and the review the webhook answers.
    orjson writes them in a fifteenth to a twentieth of the time of json.dumps (the everyday
    patch 0.6 against 9 µs; the answer, with that patch in base64, 0.35 against 8 µs; under load
    a microsecond here costs about three of server CPU: bench/RESULTS.md). What orjson refuses
    to write and JSON can hold (a string with a lone surrogate, which the review's `\\ud800`
    escapes decode to; an integer beyond 64 bits) is written by json.dumps, as before."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":")).encode()


def review(response: AdmissionResponse) -> AdmissionReview:
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}
