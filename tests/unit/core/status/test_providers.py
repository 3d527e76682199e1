"""Provider health (core/status/providers.py): what the airunway.ai/health annotation asks for,
the status it gives a config for each state of the cluster, and the reason automatic selection
then gives for passing a provider over."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.status.providers import (
    CRDCheck,
    HealthSpec,
    Observed,
    PodCheck,
    health_spec,
    provider_status,
)
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from tests.support.builders import model_deployment

NOW = "2026-12-02T10:00:00Z"
HEALTH = (
    '{"crds": [{"name": "workspaces.kaito.sh", "version": "v1beta1"}], "operatorPods": '
    '[{"namespace": "kaito", "selectors": ["app=a", "app=b"]}]}'
)


def config(health: str | None = HEALTH, status: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {"airunway.ai/health": health} if health is not None else {}
    obj: dict[str, Any] = {"metadata": {"name": "kaito", "annotations": annotations}}
    if status is not None:
        obj["status"] = status
    return obj


def test_the_annotation_names_crds_and_operator_pods() -> None:
    assert health_spec({"airunway.ai/health": HEALTH}) == HealthSpec(
        (CRDCheck("workspaces.kaito.sh", "v1beta1"),), (PodCheck("kaito", ("app=a", "app=b")),)
    )
    assert health_spec({}) == HealthSpec()
    assert health_spec({"airunway.ai/health": "{"}) == (
        "airunway.ai/health is not JSON: Expecting property name enclosed in double quotes at character 1"
    )
    assert health_spec({"airunway.ai/health": '{"crds": [{"name": 1}]}'}) == (
        "airunway.ai/health: crds[0].name must be a string"
    )
    assert health_spec({"airunway.ai/health": "[" * 3000 + "]" * 3000}) == (
        "airunway.ai/health is longer than 4096 bytes"
    )


@given(st.text(max_size=5000))
def test_any_annotation_text_is_read_or_refused_never_raised(text: str) -> None:
    got = health_spec({"airunway.ai/health": text})

    assert isinstance(got, HealthSpec | str)


def status(observed: Observed, **kw: Any) -> dict[str, Any]:
    return provider_status(
        config(**kw), observed, now=NOW, version="runway 0.1.0", upstream="kaito.sh/v1beta1"
    )


def test_ready_when_every_crd_serves_its_version_and_an_operator_pod_is_ready() -> None:
    good = Observed({"workspaces.kaito.sh": ("v1alpha1", "v1beta1")}, {("kaito", "app=b"): 1})

    assert status(good) == {
        "ready": True,
        "version": "runway 0.1.0",
        "lastHeartbeat": NOW,
        "upstreamCRDVersion": "kaito.sh/v1beta1",
        "conditions": [
            {
                "type": "UpstreamReady",
                "status": "True",
                "reason": "UpstreamReady",
                "message": "every CRD and operator pod it needs is there",
                "lastTransitionTime": NOW,
            }
        ],
    }


def test_each_missing_piece_is_named() -> None:
    def why(observed: Observed, **kw: Any) -> tuple[bool, str, str]:
        got = status(observed, **kw)
        (cond,) = got["conditions"]
        return got["ready"], cond["reason"], cond["message"]

    assert why(Observed({}, {("kaito", "app=a"): 1})) == (
        False,
        "CRDMissing",
        "CRD workspaces.kaito.sh is not installed",
    )
    assert why(Observed({"workspaces.kaito.sh": ("v1alpha1",)}, {("kaito", "app=a"): 1})) == (
        False,
        "CRDVersionNotServed",
        "CRD workspaces.kaito.sh does not serve v1beta1 (serves v1alpha1)",
    )
    assert why(Observed({"workspaces.kaito.sh": ("v1beta1",)}, {("kaito", "app=a"): 0})) == (
        False,
        "OperatorNotReady",
        "no Ready operator pod in kaito matches app=a or app=b",
    )
    assert why(Observed({}, {})) == (
        False,
        "CRDMissing",
        "CRD workspaces.kaito.sh is not installed (and 1 more: no Ready operator pod in kaito "
        "matches app=a or app=b)",
    )
    assert why(Observed({}, {}), health="nope")[:2] == (False, "HealthAnnotationInvalid")
    assert why(Observed({}, {}), health=None)[:2] == (True, "UpstreamReady")


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    earlier = {
        "conditions": [
            {
                "type": "UpstreamReady",
                "status": "False",
                "lastTransitionTime": "2026-12-01T00:00:00Z",
            }
        ]
    }

    got = status(Observed({}, {}), status=earlier)

    assert got["conditions"][0]["lastTransitionTime"] == "2026-12-01T00:00:00Z"


def test_automatic_selection_passes_over_a_provider_that_is_not_ready_and_says_why() -> None:
    configs = bundled_config_objects()
    for obj in configs:
        if obj["metadata"]["name"] == "kaito":
            obj["status"] = status(Observed({}, {}))
    registry = build_registry(configs)

    auto = admit(
        model_deployment("m", "ns", model_id="org/m/m.gguf", engine="llamacpp"), registry=registry
    )
    named = admit(
        model_deployment("m", "ns", model_id="org/m/m.gguf", engine="llamacpp", provider="kaito"),
        registry=registry,
    )

    why = (
        "CRD workspaces.kaito.sh is not installed (and 1 more: no Ready operator pod in kaito "
        "matches app=a or app=b)"
    )
    assert [(e.path, e.detail) for e in auto.errors] == [
        (
            "spec.provider.name",
            "no provider can be selected automatically (dynamo: does not offer engine llamacpp "
            "(offers: sglang, trtllm, vllm); kaito: not ready (status.ready is false: "
            f"{why}); kuberay: does not offer engine llamacpp (offers: vllm); llmd: does not "
            "offer engine llamacpp (offers: vllm); vllm: does not offer engine llamacpp "
            "(offers: vllm)); set spec.provider.name",
        )
    ]
    # named explicitly, it is admitted with a warning that says why it may not serve
    assert (named.errors, named.warnings) == (
        (),
        (
            "provider kaito is not ready (its InferenceProviderConfig status.ready is false: "
            f"{why})",
        ),
    )
