"""The name rule (providers/names.py): what admission admits, Kubernetes accepts once rendered."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.admission import admit
from providers.configs_admission import check_external_provider
from providers.errors import Reason
from providers.gateway import GatewayTarget, capabilities_of, render_gateway
from providers.model import ModelDeployment
from providers.names import (
    LABEL_MAX,
    NameRule,
    child_name,
    child_suffixes,
    label_value_problem,
    name_problem,
)
from providers.pods import model_port
from providers.registry import MODULES, ProviderRegistry
from renderer.sources import bundled_versions
from tests.support.builders import model_deployment

LOWER = set(string.ascii_lowercase)
ALNUM = LOWER | set(string.digits)
GATEWAY = GatewayTarget("inference", "gateways", False)


def is_label(value: str, *, letter_first: bool = False) -> bool:
    """RFC 1123 (or DNS-1035) label, written out character by character (no regex)."""
    if not 0 < len(value) <= 63 or not set(value) <= ALNUM | {"-"}:
        return False
    first_ok = value[0] in (LOWER if letter_first else ALNUM)
    return first_ok and value[-1] in ALNUM


def is_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(is_label(part) for part in value.split("."))


def is_label_value(value: str) -> bool:
    allowed = set(string.ascii_letters + string.digits + "-_.")
    if value == "":
        return True
    return len(value) <= 63 and set(value) <= allowed and value[0].isalnum() and value[-1].isalnum()


def kubernetes_problems(obj: dict[str, Any]) -> list[str]:
    """What the API server would refuse in one object's name, namespace and labels."""
    meta = obj["metadata"]
    problems = []
    name_ok = (
        is_label(meta["name"], letter_first=True)
        if obj["kind"] == "Service"
        else is_subdomain(meta["name"])
    )
    if not name_ok:
        problems.append(f"{obj['kind']} name {meta['name']!r}")
    if "namespace" in meta and not is_label(meta["namespace"]):
        problems.append(f"namespace {meta['namespace']!r}")
    labels = {**meta.get("labels", {}), **(obj.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {}))}  # fmt: skip
    problems += [f"label {k}={v!r}" for k, v in labels.items() if not is_label_value(v)]
    return problems


def rendered(obj: dict[str, Any], registry: ProviderRegistry) -> list[dict[str, Any]]:
    admission = admit(obj, registry=registry)
    assert admission.allowed, admission.errors
    md = ModelDeployment(admission.obj)
    pins = bundled_versions()
    objects = MODULES[md.provider_name].render(md, pins)
    if md.spec.get("gateway", {}).get("enabled"):
        capabilities = capabilities_of(md, registry)
        objects += render_gateway(md, capabilities, GATEWAY, pins, port=model_port(md))
    return objects


# Names near every boundary: the alphabet Kubernetes allows, the characters it refuses, and
# lengths around 55 (disaggregated), 59 (gateway) and 63.
NAMES = st.one_of(
    st.text(alphabet="abz09-", min_size=1, max_size=66),
    st.text(alphabet="aZ_.-/ é", max_size=8),
    st.sampled_from(["", "..", "../..", "a.b", "1a", "-a", "a-", "T4_Bad_Name"]),
    st.integers(50, 70).map(lambda n: "m" * n),
)
SHAPES = st.sampled_from(
    [
        {"provider": "vllm"},
        {"provider": "llmd", "gateway": {"enabled": True}},
        {"provider": "llmd", "mode": "disaggregated"},
        {"provider": "kaito"},
    ]
)


def shaped(name: str, namespace: str, shape: dict[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = {"gateway": shape["gateway"]} if "gateway" in shape else {}
    if shape.get("mode") == "disaggregated":
        extra["scaling"] = {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}
        return model_deployment(
            name,
            namespace,
            provider=shape["provider"],
            engine="vllm",
            mode="disaggregated",
            **extra,
        )
    return model_deployment(name, namespace, gpu=1, provider=shape["provider"], engine="vllm", **extra)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAMES, namespace=st.one_of(st.just("models"), NAMES), shape=SHAPES)
def test_every_admitted_name_renders_objects_kubernetes_accepts(
    name: str, namespace: str, shape: dict[str, Any], shipped: ProviderRegistry
) -> None:
    """The rule: admission admits a name exactly when every object rendered from it has a name,
    namespace and label values the API server accepts; a refusal names metadata.name or
    metadata.namespace."""
    obj = shaped(name, namespace, shape)
    admission = admit(obj, registry=shipped)
    name_errors = [e for e in admission.errors if e.path.startswith("metadata.")]
    if not name_errors:
        assert admission.allowed, admission.errors
        assert [p for o in rendered(obj, shipped) for p in kubernetes_problems(o)] == []
        return
    paths = {e.path for e in name_errors}
    assert paths <= {"metadata.name", "metadata.namespace"}
    # each refusal was needed: as given, the name or namespace would render something refused
    assert ("metadata.namespace" in paths) == (namespace != "" and not is_label(namespace))
    if "metadata.name" in paths and is_label(name, letter_first=True):
        suffixes = child_suffixes(ModelDeployment(obj))
        assert max(len(child_name(name, s)) for s in suffixes) > LABEL_MAX, name_errors
    elif "metadata.name" not in paths:
        assert is_label(name, letter_first=True)


@pytest.mark.parametrize(
    ("name", "namespace", "shape", "expected"),
    [
        ("", "ml", {"provider": "vllm"}, [("metadata.name", Reason.REQUIRED, "a name is required")]),
        (
            "T4_Bad_Name",
            "Models",
            {"provider": "vllm"},
            [
                ("metadata.name", Reason.INVALID, "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"),
                ("metadata.namespace", Reason.INVALID, "must be an RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"),
            ],
        ),
        (
            "a" * 62,
            "ml",
            {"provider": "llmd", "gateway": {"enabled": True}},
            [("metadata.name", Reason.INVALID, "must be at most 59 characters, not 62 (the generated <name>-epp must fit in 63)")],
        ),
        (
            "a" * 56,
            "ml",
            {"provider": "llmd", "mode": "disaggregated"},
            [("metadata.name", Reason.INVALID, "must be at most 55 characters, not 56 (the generated <name>-prefill must fit in 63)")],
        ),
        ("b" * 300, "ml", {"provider": "vllm"}, [("metadata.name", Reason.INVALID, "must be at most 63 characters, not 300")]),
        ("ok", "../../../../tmp/x", {"provider": "vllm"}, [("metadata.namespace", Reason.INVALID, "must be an RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")]),
    ],
    ids=["empty", "underscore-and-capitals", "llmd-gateway-62", "disaggregated-56", "300", "traversal"],
)  # fmt: skip
def test_names_the_api_server_refuses_are_denied_by_field(
    name: str,
    namespace: str,
    shape: dict[str, Any],
    expected: list[tuple[str, Reason, str]],
    shipped: ProviderRegistry,
) -> None:
    admission = admit(shaped(name, namespace, shape), registry=shipped)

    assert [(e.path, e.reason, e.detail) for e in admission.errors] == expected


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aZ09-_./é", max_size=70))
def test_the_name_predicates_agree_with_kubernetes_rules(value: str) -> None:
    assert (name_problem(value, NameRule.LABEL) is None) == is_label(value)
    assert (name_problem(value, NameRule.DNS1035) is None) == is_label(value, letter_first=True)
    assert (name_problem(value, NameRule.SUBDOMAIN) is None) == is_subdomain(value)
    assert (label_value_problem(value) is None) == is_label_value(value)


def test_an_external_model_provider_named_like_a_path_is_denied() -> None:
    obj = {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {"name": "../..", "namespace": "gw"},
        "spec": {
            "baseURL": "https://api.openai.com/v1",
            "credentialsSecretRef": {"name": "openai", "key": "key"},
            "models": [{"servedName": "gpt-4o"}],
        },
    }

    assert [(e.path, e.reason) for e in check_external_provider(obj)] == [
        ("metadata.name", Reason.INVALID)
    ]
