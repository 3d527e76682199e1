"""The name rule (core/model/names.py): what admission admits, Kubernetes accepts once rendered."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.admission.configs import check_external_provider
from core.admission.pipeline import admit
from core.fields.errors import Reason
from core.model.kinds import ModelDeployment
from core.model.names import (
    ANNOTATIONS_MAX,
    LABEL_MAX,
    NameRule,
    child_name,
    child_suffixes,
    label_value_problem,
    name_problem,
)
from core.selection.configs import ProviderRegistry
from tests.support.names import (
    NAMES,
    SHAPES,
    annotation_problems,
    is_label,
    is_label_value,
    is_subdomain,
    kubernetes_problems,
    rendered,
    shaped,
)


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


# Annotations near every boundary: keys of the qualified-name alphabet and the characters it
# refuses (capitals are allowed, as the API server compares keys in lower case), and one bulk
# value of one- or two-byte characters whose size straddles the 256 KiB bound.
ANNOTATION_KEYS = st.one_of(
    st.text(alphabet="aZ09-_./é", min_size=1, max_size=12),
    st.sampled_from(
        ["example.com/notes", "Example.COM/Notes", "a/b/c", "/x", "x/", "-x", "x" * 64]
    ),
)
BULK = st.tuples(st.sampled_from(["a", "é"]), st.integers(-40, 8)).map(
    lambda c: c[0] * ((ANNOTATIONS_MAX + c[1]) // len(c[0].encode()))
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    annotations=st.dictionaries(ANNOTATION_KEYS, st.text(max_size=8), max_size=4),
    bulk=st.one_of(st.none(), BULK),
    where=st.sampled_from(["metadata", "podTemplate"]),
    shape=SHAPES,
)
def test_annotations_are_admitted_exactly_when_the_api_server_accepts_them(
    annotations: dict[str, str],
    bulk: str | None,
    where: str,
    shape: dict[str, Any],
    shipped: ProviderRegistry,
) -> None:
    """Admission refuses an annotations map (the ModelDeployment's or its pod template's) exactly
    when the API server would, naming the map or the key; what it admits renders objects whose
    annotations the API server accepts."""
    if bulk is not None:
        annotations = {**annotations, "example.com/bulk": bulk}
    obj = shaped("m", "models", shape)
    if where == "metadata":
        obj["metadata"]["annotations"] = annotations
        at = "metadata.annotations"
    else:
        obj["spec"]["podTemplate"] = {"metadata": {"annotations": annotations}}
        at = "spec.podTemplate.metadata.annotations"

    admission = admit(obj, registry=shipped)

    errors = [e for e in admission.errors if e.path.startswith(at)]
    stored = admission.obj["metadata"] if where == "metadata" else {}
    seen = {**stored.get("annotations", {}), **annotations} if where == "metadata" else annotations
    assert bool(errors) == bool(annotation_problems(seen)), (errors, annotation_problems(seen))
    assert all(e.reason in (Reason.INVALID, Reason.TOO_LONG) for e in errors)
    if admission.allowed:
        assert [p for o in rendered(obj, shipped) for p in kubernetes_problems(o)] == []


def test_annotations_past_the_bound_are_denied_naming_the_map_and_the_size(
    shipped: ProviderRegistry,
) -> None:
    obj = shaped("m", "models", {"provider": "vllm"})
    obj["spec"]["podTemplate"] = {
        "metadata": {"annotations": {"example.com/notes": "é" * 131072, "Bad Key": "x"}}
    }

    admission = admit(obj, registry=shipped)

    assert [(e.path, e.reason, e.detail) for e in admission.errors] == [
        (
            "spec.podTemplate.metadata.annotations[Bad Key]",
            Reason.INVALID,
            "an annotation key's name must be 1-63 letters, digits, '-', '_' and '.', starting "
            "and ending with a letter or digit",
        ),
        (
            "spec.podTemplate.metadata.annotations",
            Reason.TOO_LONG,
            "may hold at most 262144 bytes of keys and values together, not 262169; keep bulk "
            "data out of annotations",
        ),
    ]
