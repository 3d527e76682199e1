"""Built-in kinds are checked against kubernetes-validate's schema, translated once into the form
check_schema reads; the verdicts are jsonschema's on the schema as written (with its references
inlined once, or resolved as it goes)."""

from __future__ import annotations

import copy
from typing import Any

from kubernetes_validate import utils

from core.model.kinds import ModelDeployment
from kubeio.shipped import bundled_versions
from providers.modules import plugins
from renderer.output.builtin import (
    BUILTIN_API_VERSIONS,
    BuiltinSchemas,
    builtin_schema,
    builtin_versions,
    major_minor,
)
from tests.support.builders import model_deployment, shipped_registry

PLUGINS = {plugin.name: plugin for plugin in plugins()}

PLACES = (("spec",), ("metadata",), ("spec", "template", "spec"), ("spec", "selector"), ())


def _builtin_objects() -> list[dict[str, Any]]:
    """The built-in objects the llm-d and Direct vLLM renderers emit."""
    pins = bundled_versions()
    registry = shipped_registry()
    out = []
    for provider in ("vllm", "llmd"):
        md = model_deployment("m", "ns", provider=provider, engine={"type": "vllm"})
        rendered = PLUGINS[provider].render(ModelDeployment(md), pins, registry.context(provider))
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
    inlined = BuiltinSchemas(bundled_versions().kubernetes, reference=True)
    resolved = BuiltinSchemas(bundled_versions().kubernetes, inline=False, reference=True)
    variants = [v for obj in _builtin_objects() for v in _variants(obj)]

    answers = [(inlined.reference_errors(v), resolved.reference_errors(v)) for v in variants]

    assert [a for a, b in answers if a != b] == []
    assert sum(1 for a, _ in answers if a) > len(variants) // 2  # most variants are refused


def test_the_translated_schema_gives_jsonschemas_verdicts() -> None:
    checker = BuiltinSchemas(bundled_versions().kubernetes)
    reference = BuiltinSchemas(bundled_versions().kubernetes, reference=True)
    objects = _builtin_objects()
    variants = [v for obj in objects for v in _variants(obj)]

    answers = [(checker.check(v), reference.reference_errors(v)) for v in variants]

    assert {o["kind"] for o in objects} == {"Deployment", "Service"}
    assert [(bool(a), bool(b)) for a, b in answers] == [(bool(b), bool(b)) for _, b in answers]
    assert [a[0].path for a, b in answers if a and a[0].path not in {e.path for e in b}] == []
    assert answers[0] == ([], [])  # the emitted Deployment passes
    unknown = checker.check(_variants(objects[0])[1])
    assert [(e.path, e.reason.value, e.detail) for e in unknown] == [
        ("spec.unknownField", "Unknown field", "not declared in the Kubernetes 1.37 schema"),
    ]


def test_kubernetes_validates_schemas_are_read_as_its_own_utils_read_them() -> None:
    """renderer.output.strict reads kubernetes-validate's package data itself (importing the package
    imports jsonschema); the versions, major.minor and schema files are its utils' answers."""
    assert builtin_versions() == utils.all_versions()
    for version in ("1.37.2", "v1.30", "1.9.0"):
        assert major_minor(version) == utils.major_minor(version)
    latest = f"kubernetes-json-schema/v{utils.all_versions()[-1]}-local-strict"
    for name in ("deployment-apps-v1.json", "service-v1.json", "_definitions.json"):
        minor = utils.major_minor(utils.all_versions()[-1])
        assert builtin_schema(f"{latest}/{name}") == utils.schema_contents(
            f"{latest}/{name}", minor
        )
