"""spec.gateway.gatewayRef (AI Runway #94) and spec.gateway.poolRef (#97): admitted in the
model's own namespace, refused elsewhere with the reason (core/checks/gateway.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.checks.gateway import OTHER_GATEWAY, OTHER_POOL
from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment
from core.rendering.inferencegateway import GatewayTarget, render_gateway
from core.rendering.pods import template_selector
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from tests.support.builders import model_deployment

REGISTRY = build_registry()
PINS = bundled_versions()
OFFERED = GatewayTarget("inference", "gateways")
BOUNDED = settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
ENABLED = "renders nothing unless spec.gateway.enabled is true: set it, or remove this"


def errors(gateway: dict[str, Any], provider: str = "vllm") -> list[FieldError]:
    obj = model_deployment("llama", "models", gpu=1, provider=provider, gateway=gateway)
    return list(admit(obj, old=None, registry=REGISTRY).errors)


def test_refs_in_the_models_own_namespace_are_admitted() -> None:
    assert (
        errors(
            {
                "enabled": True,
                "gatewayRef": {"name": "team-gateway", "namespace": "models"},
                "poolRef": {"name": "my-pool"},
            }
        )
        == []
    )


def test_a_gateway_in_another_namespace_is_refused_with_the_reason() -> None:
    assert errors({"enabled": True, "gatewayRef": {"name": "public", "namespace": "gateways"}}) == [
        FieldError(
            "spec.gateway.gatewayRef.namespace",
            Reason.FORBIDDEN,
            OTHER_GATEWAY.format(own="models"),
        )
    ]


def test_a_pool_in_another_namespace_is_refused_with_the_reason() -> None:
    assert errors({"enabled": True, "poolRef": {"name": "shared", "namespace": "pools"}}) == [
        FieldError(
            "spec.gateway.poolRef.namespace", Reason.FORBIDDEN, OTHER_POOL.format(own="models")
        )
    ]


def test_refs_without_the_gateway_enabled_are_refused() -> None:
    assert errors({"gatewayRef": {"name": "g"}, "poolRef": {"name": "p"}}) == [
        FieldError("spec.gateway.gatewayRef", Reason.INVALID, ENABLED),
        FieldError("spec.gateway.poolRef", Reason.INVALID, ENABLED),
    ]


def test_a_gateway_ref_beside_a_route_of_ones_own_is_refused() -> None:
    assert errors({"enabled": True, "gatewayRef": {"name": "g"}, "httpRouteRef": "mine"}) == [
        FieldError(
            "spec.gateway.gatewayRef",
            Reason.FORBIDDEN,
            "spec.gateway.httpRouteRef routes with your own HTTPRoute, whose parentRefs choose "
            "its Gateway: set one or the other",
        )
    ]


def test_a_pool_of_ones_own_is_refused_where_the_operator_makes_the_pool() -> None:
    assert errors({"enabled": True, "poolRef": {"name": "p"}}, provider="dynamo") == [
        FieldError(
            "spec.gateway.poolRef",
            Reason.FORBIDDEN,
            "provider dynamo's operator creates this model's InferencePool itself "
            "(managesInferencePool): a pool of your own would route to pods it does not select",
        )
    ]


def test_names_that_are_no_object_names_are_refused() -> None:
    assert errors(
        {
            "enabled": True,
            "gatewayRef": {"name": "Public_GW", "namespace": "Other NS"},
            "poolRef": {"name": "a/b"},
        }
    ) == [
        FieldError(
            "spec.gateway.gatewayRef.name",
            Reason.INVALID,
            "must be an RFC 1123 subdomain: dot-separated RFC 1123 labels: lower-case letters, "
            "digits and '-'",
        ),
        FieldError(
            "spec.gateway.gatewayRef.namespace",
            Reason.INVALID,
            "must be an RFC 1123 label: lower-case letters, digits and '-', starting and ending "
            "with a letter or digit",
        ),
        FieldError(
            "spec.gateway.poolRef.name",
            Reason.INVALID,
            "must be an RFC 1123 subdomain: dot-separated RFC 1123 labels: lower-case letters, "
            "digits and '-'",
        ),
    ]


def test_a_ref_without_a_name_is_refused_by_the_schema() -> None:
    (error,) = errors({"enabled": True, "gatewayRef": {"namespace": "models"}})

    assert (error.path, error.reason) == ("spec.gateway.gatewayRef.name", Reason.REQUIRED)


NAMESPACES = st.one_of(
    st.sampled_from(["models", "gateways", "kube-system", "default", "models-2", "istio-system"]),
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True),
    st.text(max_size=70),
)


@BOUNDED
@given(
    key=st.sampled_from(["gatewayRef", "poolRef"]),
    name=st.one_of(st.just("x"), st.text(max_size=300)),
    namespace=NAMESPACES,
)
def test_hostile_refs_never_render_outside_the_models_namespace(
    key: str, name: str, namespace: str
) -> None:
    """Whatever a tenant writes into a ref, an admitted model's route attaches to a Gateway in
    its own namespace or to the offered one, and reaches a pool in its own namespace; nothing
    it renders lands in, or points at, another namespace."""
    obj = model_deployment(
        "llama",
        "models",
        gpu=1,
        provider="vllm",
        gateway={"enabled": True, key: {"name": name, "namespace": namespace}},
    )
    verdict = admit(obj, old=None, registry=REGISTRY)
    if namespace != "models":
        assert not verdict.allowed
        return
    if not verdict.allowed:
        return
    md = ModelDeployment(verdict.obj)
    objects = render_gateway(md, {}, OFFERED, PINS, port=8000, selector=template_selector(md))
    (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]
    assert {o["metadata"].get("namespace", "models") for o in objects} == {"models"}
    assert [p["namespace"] for p in route["spec"]["parentRefs"]] == (
        ["models"] if key == "gatewayRef" else ["gateways"]
    )
    assert "namespace" not in route["spec"]["rules"][0]["backendRefs"][0]


@pytest.mark.parametrize("namespace", [None, "models"], ids=["namespace-omitted", "own-namespace"])
def test_the_route_attaches_to_the_models_own_gateway(
    shipped: ProviderRegistry, namespace: str | None
) -> None:
    ref = {"name": "team-gateway", **({"namespace": namespace} if namespace else {})}
    obj = model_deployment(
        "llama", "models", gpu=1, provider="vllm", gateway={"enabled": True, "gatewayRef": ref}
    )
    md = ModelDeployment(admit(obj, old=None, registry=shipped).obj)

    objects = render_gateway(md, {}, OFFERED, PINS, port=8000, selector=template_selector(md))
    (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]

    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "team-gateway",
            "namespace": "models",
        }
    ]
    assert objects[0]["kind"] == "InferencePool"  # the pool and picker as ever


def test_a_pool_of_ones_own_renders_the_route_to_it_and_nothing_else(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        "llama",
        "models",
        model={"id": "org/model", "servedName": "llama-8b"},
        gpu=1,
        provider="vllm",
        gateway={"enabled": True, "poolRef": {"name": "my-pool"}},
    )
    md = ModelDeployment(admit(obj, old=None, registry=shipped).obj)

    objects = render_gateway(
        md, {}, GatewayTarget("inference", "gateways", istio=True), PINS, port=8000,
        selector=template_selector(md),
    )  # fmt: skip

    assert objects == [
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {
                "name": "llama",
                "namespace": "models",
                "labels": {
                    "app.kubernetes.io/managed-by": "runway",
                    "airunway.ai/model-deployment": "llama",
                },
                "annotations": {"airunway.ai/rendered-from": "ModelDeployment/models/llama"},
            },
            "spec": {
                "parentRefs": [
                    {
                        "group": "gateway.networking.k8s.io",
                        "kind": "Gateway",
                        "name": "inference",
                        "namespace": "gateways",
                    }
                ],
                "rules": [
                    {
                        "matches": [
                            {
                                "path": {"type": "PathPrefix", "value": "/"},
                                "headers": [
                                    {
                                        "type": "Exact",
                                        "name": "X-Gateway-Model-Name",
                                        "value": "llama-8b",
                                    }
                                ],
                            }
                        ],
                        "backendRefs": [
                            {
                                "group": "inference.networking.k8s.io",
                                "kind": "InferencePool",
                                "name": "my-pool",
                                "weight": 1,
                            }
                        ],
                        "timeouts": {"request": "300s"},
                    }
                ],
            },
        }
    ]
