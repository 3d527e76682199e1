"""A ModelDeployment status checked as the API server checks it: the CRD's status schema
(core/schema/crds.py, structurally) and the integer formats check_schema leaves out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.schema.crds import model_deployment_status as status_schema
from core.schema.structural import check_schema

FORMATS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def format_errors(value: Any, schema: Mapping[str, Any], at: str = "status") -> list[str]:
    """What check_schema does not check: integers within their declared format, as the API
    server's OpenAPI validation does ("must be of type integer with format int32")."""
    out = []
    if isinstance(value, int) and not isinstance(value, bool) and schema.get("format") in FORMATS:
        low, high = FORMATS[schema["format"]]
        if not low <= value <= high:
            out.append(f"{at}: {value} is not {schema['format']}")
    if isinstance(value, Mapping):
        for key, item in value.items():
            sub = (schema.get("properties") or {}).get(key)
            if sub is not None:
                out += format_errors(item, sub, f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += format_errors(item, schema["items"], f"{at}[{i}]")
    return out


def schema_errors(status: dict[str, Any]) -> list[FieldError | str]:
    schema = status_schema()
    found: list[FieldError | str] = list(check_schema(status, schema, FieldPath.root("status")))
    return found + format_errors(status, schema)
