"""Built-in kinds are checked against kubernetes-validate's schema with its references inlined
once; the answers are those of the validator that resolves each reference as it goes."""

from __future__ import annotations

import copy
from typing import Any

from providers.model import ModelDeployment
from providers.registry import MODULES
from renderer.sources import bundled_versions
from renderer.strict import BUILTIN_API_VERSIONS, BuiltinSchemas
from tests.support.builders import model_deployment

PLACES = (("spec",), ("metadata",), ("spec", "template", "spec"), ("spec", "selector"), ())


def _builtin_objects() -> list[dict[str, Any]]:
    """The built-in objects the llm-d and Direct vLLM renderers emit."""
    pins = bundled_versions()
    out = []
    for provider in ("vllm", "llmd"):
        md = model_deployment("m", "ns", provider=provider, engine={"type": "vllm"})
        rendered = MODULES[provider].render(ModelDeployment(md), pins)
        out += [o for o in rendered if o["apiVersion"] in BUILTIN_API_VERSIONS]
    return out


def _at(obj: Any, place: tuple[str, ...]) -> Any:
    for key in place:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _variants(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object as emitted, then with an unknown field, and with each field of a place given
    a value of the wrong type, at several depths."""
    out = [obj]
    for place in PLACES:
        if not isinstance(_at(obj, place), dict):
            continue
        unknown = copy.deepcopy(obj)
        _at(unknown, place)["unknownField"] = 1
        out.append(unknown)
        for field in _at(obj, place):
            wrong = copy.deepcopy(obj)
            node = _at(wrong, place)
            node[field] = 12345 if isinstance(node[field], str | dict | list) else "x"
            out.append(wrong)
    return out


def test_inlined_references_give_the_answers_of_resolved_ones() -> None:
    inlined = BuiltinSchemas(bundled_versions().kubernetes)
    resolved = BuiltinSchemas(bundled_versions().kubernetes, inline=False)
    objects = _builtin_objects()
    variants = [v for obj in objects for v in _variants(obj)]

    answers = [(inlined.check(v), resolved.check(v)) for v in variants]

    assert {o["kind"] for o in objects} == {"Deployment", "Service"}
    assert [a for a, b in answers if a != b] == []
    assert sum(1 for a, _ in answers if a) > len(variants) // 2  # most variants are refused
    assert answers[0] == ([], [])  # the emitted Deployment passes
