"""admit_object, the one entry of admission: each kind's whole Verdict, in its one JSON form
(the element of `runway validate -o json`), for each step the API server calls (mutate,
validate) and for both (`validate`, the render, the merge); and what an edge adds to it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.admission.entry import admit_object
from core.admission.verdict import MD, Failure, Step, Verdict
from core.fields.errors import FieldError, Reason
from core.model.destinations import Destinations
from core.model.kinds import Choice
from core.selection.choice import Decision
from tests.support.builders import (
    external_model_provider,
    model_deployment,
    provider_config,
    shipped_registry,
)

REGISTRY = shipped_registry()
EXPLICIT = {
    "airunway.ai/engine-selection": "explicit",
    "airunway.ai/engine-selected-reason": "set in spec.engine.type",
    "airunway.ai/provider-selection": "explicit",
    "airunway.ai/provider-selected-reason": "set in spec.provider.name",
}
ENGINE = {
    "type": "vllm",
    "enablePrefixCaching": True,
    "enforceEager": False,
    "trustRemoteCode": False,
}
# mutation's changes to model_deployment("chat", "models", gpu=G, engine="vllm", provider=P)
PATCH = [
    {"op": "add", "path": "/metadata/annotations", "value": EXPLICIT},
    {"op": "add", "path": "/spec/model/source", "value": "huggingface"},
    {"op": "add", "path": "/spec/resources/gpu/type", "value": "nvidia.com/gpu"},
    {"op": "add", "path": "/spec/engine/enablePrefixCaching", "value": True},
    {"op": "add", "path": "/spec/engine/enforceEager", "value": False},
    {"op": "add", "path": "/spec/engine/trustRemoteCode", "value": False},
    {"op": "add", "path": "/spec/serving", "value": {"mode": "aggregated"}},
    {"op": "add", "path": "/spec/scaling", "value": {"replicas": 1}},
]
NO_GPU = (
    "Unsupported value: provider kaito does not run engine vllm without a GPU; "
    "set spec.resources.gpu.count > 0"
)
NO_PROVIDER = (
    "Required value: no provider can be selected automatically (dynamo: does not run engine "
    "trtllm without a GPU; kaito: does not offer engine trtllm (offers: llamacpp, vllm); "
    "kuberay: does not offer engine trtllm (offers: vllm); llmd: does not offer engine trtllm "
    "(offers: vllm); vllm: does not offer engine trtllm (offers: vllm)); set spec.provider.name"
)
PRIVATE = (
    'Forbidden: host "10.0.0.1" is a private or reserved address; an external provider is '
    "reached by a public DNS name or a global IP address"
)


def chat(gpu: int, provider: str) -> dict[str, Any]:
    return model_deployment("chat", "models", gpu=gpu, engine="vllm", provider=provider)


def hydrated(gpu: int, provider: str) -> dict[str, Any]:
    """chat(gpu, provider) as mutation leaves it."""
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "chat", "namespace": "models", "annotations": EXPLICIT},
        "spec": {
            "model": {"id": "org/model", "source": "huggingface"},
            "resources": {"gpu": {"count": gpu, "type": "nvidia.com/gpu"}},
            "engine": ENGINE,
            "provider": {"name": provider},
            "serving": {"mode": "aggregated"},
            "scaling": {"replicas": 1},
        },
    }


def answer(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The JSON form of an allowed CREATE of `obj` that changes nothing, with `fields` replaced."""
    namespace = obj["metadata"].get("namespace")
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": obj["metadata"]["name"],
        "namespace": namespace,
        "source": None,
        "operation": "CREATE",
        "allowed": True,
        "skipped": None,
        "errors": [],
        "warnings": [],
        "patch": [],
        "object": obj,
    } | fields


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (Step.MUTATE, answer(chat(1, "vllm"), patch=PATCH, object=hydrated(1, "vllm"))),
        (Step.VALIDATE, answer(chat(1, "vllm"), object=hydrated(1, "vllm"))),
        (Step.ADMIT, answer(chat(1, "vllm"), patch=PATCH, object=hydrated(1, "vllm"))),
    ],
    ids=["mutate", "validate", "admit"],
)
def test_an_allowed_model_deployment(step: Step, expected: dict[str, Any]) -> None:
    obj = chat(1, "vllm")
    sent = copy.deepcopy(obj)

    verdict = admit_object(obj, registry=REGISTRY, step=step)

    assert verdict.as_json() == expected
    assert obj == sent


def test_the_mutating_step_says_what_it_stamped() -> None:
    verdict = admit_object(chat(1, "vllm"), registry=REGISTRY, step=Step.MUTATE)

    assert (verdict.engine, verdict.provider, verdict.selection) == (
        Decision("vllm", "set in spec.engine.type", Choice.EXPLICIT),
        Decision("vllm", "set in spec.provider.name", Choice.EXPLICIT),
        "explicit",
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        # the mutating webhook stamps what it can; the validating one denies
        (Step.MUTATE, answer(chat(0, "kaito"), patch=PATCH, object=hydrated(0, "kaito"))),
        (
            Step.VALIDATE,
            answer(
                chat(0, "kaito"),
                allowed=False,
                errors=[{"field": "spec.resources.gpu.count", "message": NO_GPU}],
                object=hydrated(0, "kaito"),
            ),
        ),
        (
            Step.ADMIT,
            answer(
                chat(0, "kaito"),
                allowed=False,
                errors=[{"field": "spec.resources.gpu.count", "message": NO_GPU}],
                patch=PATCH,
                object=hydrated(0, "kaito"),
            ),
        ),
    ],
    ids=["mutate", "validate", "admit"],
)
def test_a_model_deployment_its_provider_cannot_run(step: Step, expected: dict[str, Any]) -> None:
    assert admit_object(chat(0, "kaito"), registry=REGISTRY, step=step).as_json() == expected


@pytest.mark.parametrize("step", list(Step), ids=str)
def test_a_model_deployment_no_provider_can_run_is_denied_at_every_step(step: Step) -> None:
    obj = model_deployment("chat", "models", gpu=0, engine="trtllm")

    verdict = admit_object(obj, registry=REGISTRY, step=step)

    assert verdict.as_json() == answer(
        obj, allowed=False, errors=[{"field": "spec.provider.name", "message": NO_PROVIDER}]
    )


def test_an_update_keeps_the_stored_selection_and_refuses_a_change() -> None:
    stored = hydrated(1, "vllm")
    obj = chat(1, "kuberay")

    verdict = admit_object(obj, old=stored, registry=REGISTRY, step=Step.VALIDATE)

    assert verdict.as_json() == answer(
        obj,
        operation="UPDATE",
        allowed=False,
        errors=[
            {
                "field": "spec.provider.name",
                "message": 'Immutable: is immutable (was "vllm", now "kuberay"); changing it '
                "requires deleting and recreating the ModelDeployment",
            }
        ],
        object=hydrated(1, "kuberay"),
    )


def test_the_kind_the_caller_names_decides_the_checks() -> None:
    """The webhook passes the kind its request names: an object without an apiVersion sent as
    a ModelDeployment is judged as one (and refused), not skipped as another group's."""
    obj = {"kind": "ModelDeployment", "metadata": {"name": "x"}}

    judged = admit_object(obj, registry=REGISTRY, kind=MD)
    own = admit_object(obj, registry=REGISTRY)

    assert judged.as_json() == answer(
        obj,
        allowed=False,
        errors=[
            {
                "field": "kind",
                "message": "Invalid value: expected airunway.ai/v1alpha1 ModelDeployment, "
                "got None ModelDeployment",
            }
        ],
    )
    assert own.as_json() == answer(obj, skipped="not a kind of Runway's API groups")


INTERNAL = external_model_provider(baseURL="http://10.0.0.1/v1")
REFUSED = answer(INTERNAL, allowed=False, errors=[{"field": "spec.baseURL", "message": PRIVATE}])


@pytest.mark.parametrize(
    ("step", "destinations", "expected"),
    [
        (Step.ADMIT, "", REFUSED),
        (Step.VALIDATE, "", REFUSED),
        (Step.ADMIT, "10.0.0.0/8", answer(INTERNAL)),
        (Step.MUTATE, "", answer(INTERNAL)),  # no mutating webhook is called for it
    ],
    ids=["admit", "validate", "allowed-destination", "mutate"],
)
def test_an_external_model_provider(
    step: Step, destinations: str, expected: dict[str, Any]
) -> None:
    obj = copy.deepcopy(INTERNAL)
    allowed = Destinations.parse([destinations] if destinations else [])

    verdict = admit_object(obj, registry=REGISTRY, step=step, destinations=allowed)

    assert verdict.as_json() == expected


def test_an_external_model_provider_without_a_namespace_is_in_the_default_one() -> None:
    obj = external_model_provider()
    del obj["metadata"]["namespace"]

    assert admit_object(obj, registry=REGISTRY).as_json() == answer(obj, namespace="default")


BROKEN_RULE = {
    "apiVersion": "airunway.ai/v1alpha1",
    "kind": "InferenceProviderConfig",
    "metadata": {"name": "x"},
    "spec": {"selectionRules": [{"condition": "spec.(", "priority": 1}]},
}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (provider_config("x"), answer(provider_config("x"))),
        (
            BROKEN_RULE,
            answer(
                BROKEN_RULE,
                allowed=False,
                errors=[
                    {
                        "field": "spec.selectionRules[0].condition",
                        "message": "Invalid value: line 1, column 6: Syntax error: no viable "
                        "alternative at input '.('",
                    }
                ],
            ),
        ),
    ],
    ids=["allowed", "broken-rule"],
)
def test_an_inference_provider_config(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    assert admit_object(obj, registry=REGISTRY).as_json() == expected


@pytest.mark.parametrize("step", list(Step), ids=str)
def test_another_kind_is_not_runways_to_judge(step: Step) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}

    verdict = admit_object(obj, registry=REGISTRY, step=step)

    assert verdict.as_json() == answer(obj, skipped="not a kind of Runway's API groups")


def test_an_edge_adds_its_own_denial_and_a_failure_to_the_verdict() -> None:
    obj = external_model_provider()
    forbidden = FieldError("spec.credentialsSecretRef", Reason.FORBIDDEN, "may not get it")

    verdict = admit_object(obj, registry=REGISTRY).denied_by([forbidden])
    unchanged = admit_object(obj, registry=REGISTRY)

    assert verdict.as_json() == answer(
        obj,
        allowed=False,
        errors=[{"field": "spec.credentialsSecretRef", "message": "Forbidden: may not get it"}],
    )
    assert unchanged.denied_by([]) is unchanged
    assert Verdict.failed(obj, None, "could not be checked").denied_by(
        [Failure("", "policy unreadable")]
    ).as_json() == answer(
        obj,
        allowed=False,
        errors=[
            {"field": "", "message": "could not be checked"},
            {"field": "", "message": "policy unreadable"},
        ],
    )
