"""Kubernetes' name rules written out character by character (no regex), the objects a
ModelDeployment renders, and generated names near every boundary: shared by the name-rule
tests (tests/unit/providers/test_names.py) and `make fuzz` (tests/fuzzing/render.py)."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
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


def is_qualified_name(key: str) -> bool:
    """[prefix/]name: a subdomain prefix, and a name shaped like a non-empty label value."""
    prefix, slash, name = key.rpartition("/")
    return (not slash or is_subdomain(prefix)) and name != "" and is_label_value(name)


def annotation_problems(annotations: dict[Any, Any]) -> list[str]:
    """What the API server refuses in one annotations map: a key that is not a qualified name in
    lower case, a value that is not a string, more than 262,144 bytes of UTF-8 keys and values."""
    problems = [f"annotation {k!r}" for k in annotations if not is_qualified_name(str(k).lower())]
    problems += [
        f"annotation {k!r} value" for k, v in annotations.items() if not isinstance(v, str)
    ]
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    return problems + ([f"annotations of {size} bytes"] if size > 262144 else [])


def kubernetes_problems(obj: dict[str, Any]) -> list[str]:
    """What the API server would refuse in one object's name, namespace, labels and
    annotations."""
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
    problems += [f"label key {k!r}" for k in labels if not is_qualified_name(k)]
    problems += annotation_problems(meta.get("annotations", {}))
    template = obj.get("spec", {}).get("template", {}).get("metadata", {})
    return problems + annotation_problems(template.get("annotations", {}))


def rendered(obj: dict[str, Any], registry: ProviderRegistry) -> list[dict[str, Any]]:
    admission = admit(obj, registry=registry)
    assert admission.allowed, admission.errors
    md = ModelDeployment(admission.obj)
    pins = bundled_versions()
    return render_model(md, registry, pins, GATEWAY)


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
