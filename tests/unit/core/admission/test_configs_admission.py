"""Admission of InferenceProviderConfig and ExternalModelProvider objects."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.admission.configs import check_external_provider, check_provider_config
from core.fields.errors import Reason
from core.model.servednames import LITERAL
from kubeio.shipped import bundled_config_objects
from tests.support.builders import external_model_provider, provider_config


def emp(**spec: Any) -> dict[str, Any]:
    models = [
        {"servedName": "gpt-x"},
        {"servedName": "meta-llama/Llama-3.1-8B-Instruct", "upstreamModel": "llama"},
    ]
    return external_model_provider(**({"models": models} | spec))


def errors_of(
    obj: dict[str, Any], check: Any = check_external_provider
) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in check(obj)]


@pytest.mark.parametrize("name", ["dynamo", "kaito", "kuberay", "llmd", "vllm"])
def test_shipped_provider_configs_are_admitted(name: str) -> None:
    (config,) = [c for c in bundled_config_objects() if c["metadata"]["name"] == name]

    assert errors_of(config, check_provider_config) == []


def test_provider_config_with_a_rule_that_does_not_compile_names_the_rule() -> None:
    config = provider_config("dynamo", rules=[("true", 1), ("spec.engine.type == 'vllm' &&", 5)])

    assert errors_of(config, check_provider_config) == [
        (
            "spec.selectionRules[1].condition",
            Reason.INVALID,
            "line 1, column 30: Syntax error: mismatched input '<EOF>'",
        )
    ]


def test_provider_config_rule_size_and_shape_are_bounded() -> None:
    config = provider_config("dynamo", rules=[("true || " * 200 + "true", 1)])
    config["spec"]["selectionRules"].append({"priority": -1})

    assert errors_of(config, check_provider_config) == [
        ("spec.selectionRules[0].condition", Reason.TOO_LONG, "may not be longer than 1024"),
        ("spec.selectionRules[1].condition", Reason.REQUIRED, "required field is missing"),
        ("spec.selectionRules[1].priority", Reason.INVALID, "must be >= 0"),
    ]


def test_provider_config_with_3000_rules_is_refused_before_any_rule_is_compiled() -> None:
    config = provider_config("dynamo", rules=[("spec.engine.type ==", 1)] * 3000)

    assert errors_of(config, check_provider_config) == [
        ("spec.selectionRules", Reason.TOO_MANY, "must have at most 64 items, has 3000"),
    ]


def test_provider_config_larger_than_the_size_limit_is_refused() -> None:
    config = provider_config("dynamo", rules=[("true", 1)])
    config["spec"]["capabilities"]["engines"][0]["apiFormats"] = ["chat"] * 30_000

    assert errors_of(config, check_provider_config) == [
        (
            "spec",
            Reason.TOO_LONG,
            f"is {len(_json(config['spec'])):,} bytes as JSON; the limit is 131,072",
        ),
    ]


def test_provider_config_rule_over_the_cost_limit_is_refused_with_its_estimate() -> None:
    nested = "true"
    for var in "edcba":
        nested = f"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all({var}, {nested})"
    config = provider_config("dynamo", rules=[("true", 1), (nested, 5)])

    assert errors_of(config, check_provider_config) == [
        (
            "spec.selectionRules[1].condition",
            Reason.INVALID,
            "estimated cost 1,011,151 exceeds the limit of 150,000 per rule (loops multiply: "
            "iterate fewer or smaller lists, do not grow strings or lists)",
        ),
    ]


def test_provider_config_whose_rules_together_cost_too_much_is_refused() -> None:
    three = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(a, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(b, "
    three += "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(c, true)))"
    config = provider_config("dynamo", rules=[(three, 1)] * 15)

    assert errors_of(config, check_provider_config) == [
        (
            "spec.selectionRules",
            Reason.INVALID,
            "the selection rules' estimated costs add up to 152,265, over the limit of 150,000 "
            "per config",
        ),
    ]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_valid_external_provider_is_admitted() -> None:
    assert errors_of(emp()) == []


@pytest.mark.parametrize("key", ["apiKey", "token", "api_key"])
def test_inline_credentials_are_denied(key: str) -> None:
    obj = emp(**{key: "sk-live-secret"})

    assert errors_of(obj) == [
        (
            f"spec.{key}",
            Reason.FORBIDDEN,
            "credentials are never inline; reference a Secret key in spec.credentialsSecretRef",
        )
    ]
    assert all("sk-live-secret" not in str(e) for e in check_external_provider(obj))


@pytest.mark.parametrize(
    ("url", "error"),
    [
        (
            "ftp://api.example.com",
            (Reason.INVALID, "must be an http:// or https:// URL with a host"),
        ),
        ("api.example.com/v1", (Reason.INVALID, "must be an http:// or https:// URL with a host")),
        (
            "https://user:pw@api.example.com",
            (
                Reason.FORBIDDEN,
                "must not carry credentials; reference a Secret key in spec.credentialsSecretRef",
            ),
        ),
        (
            "https://api.example.com/v1?key=abc",
            (Reason.INVALID, "must not have a query or a fragment"),
        ),
    ],
    ids=["scheme", "no-scheme", "userinfo", "query"],
)
def test_base_url_must_be_a_plain_http_url(url: str, error: tuple[Reason, str]) -> None:
    assert errors_of(emp(baseURL=url)) == [("spec.baseURL", *error)]


def test_base_url_and_models_are_required_and_models_non_empty() -> None:
    assert errors_of(emp(baseURL=None, models=[])) == [
        ("spec.baseURL", Reason.REQUIRED, "required field is missing"),
        ("spec.models", Reason.INVALID, "must have at least 1 items"),
    ]


def test_served_names_are_tokens_and_unique_within_the_object() -> None:
    models = [{"servedName": "gpt-x"}, {"servedName": "has space"}, {"servedName": "gpt-x"}]

    assert errors_of(emp(models=models)) == [
        (
            "spec.models[1].servedName",
            Reason.INVALID,
            LITERAL,
        ),
        (
            "spec.models[2].servedName",
            Reason.DUPLICATE,
            '"gpt-x" is offered twice by this provider',
        ),
    ]


def test_secret_reference_needs_a_name() -> None:
    assert errors_of(emp(credentialsSecretRef={"key": "apiKey"})) == [
        ("spec.credentialsSecretRef.name", Reason.REQUIRED, "required field is missing")
    ]
