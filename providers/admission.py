"""The admission pipeline, shared by the webhook and `runway validate`: mutate, then validate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from providers.errors import FieldError
from providers.hydrate import Hydration, hydrate
from providers.registry import ProviderRegistry
from providers.validation import Operation, check_spec


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer for one object: allowed or not, the mutated object, its patch, and why."""

    allowed: bool
    obj: dict[str, Any]
    patch: list[dict[str, Any]]
    errors: tuple[FieldError, ...]
    warnings: tuple[str, ...]
    hydration: Hydration
    validation_warnings: tuple[str, ...] = ()  # the validating webhook's share of `warnings`


def admit(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, registry: ProviderRegistry
) -> Admission:
    """Mutate then validate, as the API server calls the two webhooks; `old` means UPDATE."""
    hydration = hydrate(obj, old=old, registry=registry)
    operation = Operation.UPDATE if old is not None else Operation.CREATE
    if hydration.structural:
        return Admission(False, dict(obj), [], hydration.errors, hydration.warnings, hydration)
    if hydration.errors:  # selection failed; the other rules still run, so every error is told
        rest = check_spec(hydration.obj, old=old, operation=operation, registry=registry)
        errors = hydration.errors + tuple(e for e in rest.errors if e not in hydration.errors)
        return Admission(False, dict(obj), [], errors, hydration.warnings, hydration)
    # hydrate() already ran the structure check on this object; it is not repeated.
    verdict = check_spec(hydration.obj, old=old, operation=operation, registry=registry)
    warnings = hydration.warnings + verdict.warnings
    patch = json_patch(obj, hydration.obj)
    return Admission(
        not verdict.errors,
        hydration.obj,
        patch,
        verdict.errors,
        warnings,
        hydration,
        verdict.warnings,
    )


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn `before` into `after` (empty when they are equal).

    A structural diff: objects are compared key by key (removals, then changes and additions,
    in key order), anything else that differs is replaced whole. Hydration only adds and sets
    fields, so this gives the same small patch as `jsonpatch.make_patch`, which also searches
    for moves and list edits and cost more than the rest of an admission besides the rules.
    Values in the operations are shared with `after`: serialize them, never change them.
    """
    ops: list[dict[str, Any]] = []
    stack: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = [("", before, after)]
    while stack:
        path, old, new = stack.pop()
        nested: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = []
        for key, was in old.items():
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
                continue
            now = new[key]
            if was is now:
                continue
            if isinstance(was, Mapping) and isinstance(now, Mapping):
                nested.append((f"{path}/{_escape(key)}", was, now))
            elif not _same(was, now):
                ops.append({"op": "replace", "path": f"{path}/{_escape(key)}", "value": now})
        ops.extend(
            {"op": "add", "path": f"{path}/{_escape(key)}", "value": new[key]}
            for key in new
            if key not in old
        )
        stack.extend(reversed(nested))
    return ops


def _escape(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1, 1.0 and true are different values (Python's == says equal)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
