"""Classifying an API server's refusal of a write: is it an upstream-schema mismatch?

The API server answers an unknown field differently by write path (observed on kube-apiserver
v1.37, see tests/e2e/test_rejections.py):
  create of a custom resource with fieldValidation=Strict   400  strict decoding error: unknown field "spec.x"
  merge patch of a custom resource, fieldValidation=Strict  422  strict decoding error: unknown field "spec.x"
  server-side apply of a built-in type (any validation)     500  ... .spec.x: field not declared in schema
So the message decides, never the status code: matching on the status class would miss the
apply path and would wrongly catch ordinary type and CEL validation failures, which no upstream
upgrade would fix.
"""

from __future__ import annotations

import re

from core.fields.errors import IncompatibleUpstream

_UNKNOWN_FIELD = re.compile(r'strict decoding error:.*?unknown field "([^"]*)"', re.DOTALL)
_NOT_DECLARED = re.compile(r"(?:^|[\s:])(\.?[^\s:]*): field not declared in schema")


def classify_write_error(message: str) -> IncompatibleUpstream | None:
    """IncompatibleUpstream (with the field, when the message names one), or None."""
    match = _UNKNOWN_FIELD.search(message)
    if match is not None:
        return IncompatibleUpstream(match.group(1), message)
    if "field not declared in schema" in message:
        declared = _NOT_DECLARED.search(message)
        field = declared.group(1).lstrip(".") if declared is not None else ""
        return IncompatibleUpstream(field, message)
    return None
