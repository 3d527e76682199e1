"""A structural OpenAPI v3 check in the manner of the Kubernetes API server, with pruning made loud.

The API server silently drops fields a CRD schema does not declare; Runway reports them instead
(the #308 lesson). Supported: type, nullable, enum, required, properties, additionalProperties,
items, min/max (value, length, items), maxProperties, pattern, anyOf/allOf/oneOf, x-kubernetes-int-or-string,
x-kubernetes-preserve-unknown-fields, x-kubernetes-embedded-resource and map-type list keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import re2

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.suggest import MAX_SUGGESTIONS, close_matches

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}
EMBEDDED_KEYS = frozenset({"apiVersion", "kind", "metadata"})
# The longest key of a map whose schema declares maxProperties: a qualified Kubernetes key (a
# 253-character DNS-subdomain prefix, "/", a 63-character name). OpenAPI cannot bound keys; the
# CRD bounds how many, admission (this check) also how long, so that the rule cost estimate
# (core.cel.cost) may take every key of such a map at this length.
MAX_KEY_LENGTH = 253 + 1 + 63
_SURROGATE = re.compile("[\ud800-\udfff]")  # a character class: linear in Python's re too


def check_schema(value: Any, schema: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """Every structural error of `value` against `schema`, in document order."""
    errors: list[FieldError] = []
    _check(value, schema, at, errors)
    return errors


def type_name(value: Any) -> str:
    """The JSON type name of a Python value, for messages."""
    if value is None:
        return "null"
    for name, types in JSON_TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    return isinstance(value, JSON_TYPES.get(name, ()))


def _check(value: Any, schema: Mapping[str, Any], at: FieldPath, errors: list[FieldError]) -> None:
    if value is None:
        if not schema.get("nullable", False) and "type" in schema:
            errors.append(
                FieldError(str(at), Reason.INVALID, f"must be {schema['type']}, not null")
            )
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (_is_type(value, "integer") or _is_type(value, "string")):
            errors.append(FieldError(str(at), Reason.INVALID, "must be an integer or a string"))
            return
    elif "type" in schema and not _is_type(value, schema["type"]):
        expected, got = schema["type"], type_name(value)
        errors.append(FieldError(str(at), Reason.INVALID, f"must be {expected}, not {got}"))
        return
    if not _check_combinators(value, schema, at, errors):
        return
    _check_scalar(value, schema, at, errors)
    if isinstance(value, dict):
        _check_object(value, schema, at, errors)
    elif isinstance(value, list):
        _check_array(value, schema, at, errors)


def _check_combinators(
    value: Any, schema: Mapping[str, Any], at: FieldPath, errors: list[FieldError]
) -> bool:
    for sub in schema.get("allOf", ()):
        _check(value, sub, at, errors)
    for key in ("anyOf", "oneOf"):
        branches: Sequence[Mapping[str, Any]] = schema.get(key, ())
        if branches and not any(not _branch_errors(value, b, at) for b in branches):
            errors.append(FieldError(str(at), Reason.INVALID, f"matches none of the {key} forms"))
            return False
    return True


def _branch_errors(value: Any, branch: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """A combinator branch constrains values and declares no fields of its own (a structural
    schema's rule), so a field it does not list is no error of the branch."""
    return [e for e in check_schema(value, branch, at) if e.reason is not Reason.UNKNOWN_FIELD]


def _check_scalar(
    value: Any, schema: Mapping[str, Any], at: FieldPath, errors: list[FieldError]
) -> None:
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        # The value is not echoed: this check also runs on overrides, where people paste tokens.
        errors.append(FieldError(str(at), Reason.UNSUPPORTED, f"supported values: {allowed}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(FieldError(str(at), Reason.INVALID, f"must be >= {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(FieldError(str(at), Reason.INVALID, f"must be <= {schema['maximum']}"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            detail = f"may not be longer than {schema['maxLength']}"
            errors.append(FieldError(str(at), Reason.TOO_LONG, detail))
        if "minLength" in schema and len(value) < schema["minLength"]:
            detail = f"must be at least {schema['minLength']} long"
            errors.append(FieldError(str(at), Reason.INVALID, detail))
        if "pattern" in schema:
            problem = pattern_problem(schema["pattern"], value)
            if problem is not None:
                errors.append(FieldError(str(at), Reason.INVALID, problem))


def pattern_problem(pattern: str, value: str) -> str | None:
    """Why `value` fails the schema's `pattern`, matched as the API server does: RE2 (Go's
    regexp), linear in the value's length whatever the pattern, where Python's backtracking
    `re` takes hours on some patterns a CRD may carry. Lone surrogates, which UTF-8 cannot hold,
    are matched as U+FFFD, the character Go's JSON decoder reads them as."""
    try:
        found = re2.search(pattern, value)
    except UnicodeEncodeError:
        found = re2.search(pattern, _SURROGATE.sub("\ufffd", value))
    except re2.error:
        return f"the schema's pattern {pattern} is not an RE2 (Go) regular expression"
    return None if found is not None else f"must match the pattern {pattern}"


def _check_object(
    value: dict[str, Any], schema: Mapping[str, Any], at: FieldPath, errors: list[FieldError]
) -> None:
    if "maxProperties" in schema:
        if len(value) > schema["maxProperties"]:
            detail = f"must have at most {schema['maxProperties']} entries"
            errors.append(FieldError(str(at), Reason.TOO_MANY, detail))
        if any(isinstance(key, str) and len(key) > MAX_KEY_LENGTH for key in value):
            detail = f"keys may not be longer than {MAX_KEY_LENGTH} characters"
            errors.append(FieldError(str(at), Reason.TOO_LONG, detail))
    props: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            errors.append(
                FieldError(str(at.child(name)), Reason.REQUIRED, "required field is missing")
            )
    extra = schema.get("additionalProperties")
    open_object = schema.get("x-kubernetes-preserve-unknown-fields", False)
    # A resource's apiVersion, kind and metadata (ObjectMeta) are the API server's own, accepted
    # whatever the CRD schema declares (some declare only spec and status); never pruned.
    object_root = not at.parts or schema.get("x-kubernetes-embedded-resource", False)
    for key, item in value.items():
        if object_root and key in EMBEDDED_KEYS and (key != "metadata" or isinstance(item, dict)):
            continue
        if key in props:
            _check(item, props[key], at.child(key), errors)
        elif isinstance(extra, Mapping):
            _check(item, extra, at.child(key), errors)
        elif (
            extra is True
            or open_object
            or (schema.get("x-kubernetes-embedded-resource") and key in EMBEDDED_KEYS)
        ):
            continue
        elif props or extra is False or "type" in schema:
            # Suggestions only while the check has found few errors: MAX_SUGGESTIONS searches
            # at most, however many unknown fields the value holds (core.checks.suggest).
            suggest = len(errors) < MAX_SUGGESTIONS
            errors.append(
                FieldError(str(at.child(key)), Reason.UNKNOWN_FIELD, _unknown(key, props, suggest))
            )


def _unknown(key: str, props: Mapping[str, Any], suggest: bool) -> str:
    close = close_matches(key, sorted(props)) if suggest else []
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    return f"not declared in the schema{hint}"


def _check_array(
    value: list[Any], schema: Mapping[str, Any], at: FieldPath, errors: list[FieldError]
) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(
            FieldError(str(at), Reason.TOO_MANY, f"must have at most {schema['maxItems']} items")
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(
            FieldError(str(at), Reason.INVALID, f"must have at least {schema['minItems']} items")
        )
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, at.index(i), errors)
    if schema.get("x-kubernetes-list-type") == "map":
        _check_map_keys(value, schema.get("x-kubernetes-list-map-keys", ()), at, errors)
    elif schema.get("x-kubernetes-list-type") == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                errors.append(FieldError(str(at.index(i)), Reason.DUPLICATE, repr(item)))
            seen.append(item)


def _check_map_keys(
    value: list[Any], keys: Sequence[str], at: FieldPath, errors: list[FieldError]
) -> None:
    seen: set[tuple[Any, ...]] = set()
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not keys:
            continue
        key = tuple(repr(item.get(k)) for k in keys)
        if key in seen and len(keys) == 1:
            # One key: on the key field, as the API server reports duplicate names of built-in
            # lists (containers[1].name) and AI Runway its volumes; not on the whole item.
            where = at.index(i).child(keys[0])
            errors.append(FieldError(str(where), Reason.DUPLICATE, json.dumps(item.get(keys[0]))))
        elif key in seen:
            shown = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
            errors.append(FieldError(str(at.index(i)), Reason.DUPLICATE, shown))
        seen.add(key)
