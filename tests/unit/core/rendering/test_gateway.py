"""Gateway objects for spec.gateway.enabled: true."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.hydrate import hydrate
from core.model.kinds import ModelDeployment
from core.model.servednames import served_name
from core.rendering.inferencegateway import GatewayTarget, is_enabled, render_gateway
from core.rendering.pods import template_selector
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from tests.support.builders import model_deployment

PINS = bundled_versions()
TARGET = GatewayTarget("inference", "gateways")


def hydrated(shipped: ProviderRegistry, **kw: Any) -> ModelDeployment:
    return ModelDeployment(hydrate(model_deployment("llama", "models", **kw), registry=shipped).obj)


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [
        f"{o['kind']}/{o['metadata']['name']}@{o['metadata'].get('namespace', '')}" for o in objects
    ]


@pytest.mark.parametrize(
    ("gateway", "served", "capabilities", "expected"),
    [
        ({"enabled": True, "modelName": "route-me"}, "served", {}, "route-me"),
        ({"enabled": True}, "served", {}, "served"),
        ({"enabled": True}, "served", {"ignoresServedName": True}, "org/model"),
        ({"enabled": True}, None, {}, "org/model"),
    ],
    ids=["explicit", "served-name", "provider-ignores-served-name", "model-id"],
)
def test_model_name_resolution(
    gateway: dict[str, Any], served: str | None, capabilities: dict[str, Any], expected: str
) -> None:
    model = {"id": "org/model", **({"servedName": served} if served else {})}

    assert (
        served_name(ModelDeployment(model_deployment(gateway=gateway, model=model)), capabilities)
        == expected
    )


def test_only_an_explicit_true_enables_the_gateway() -> None:
    assert [
        is_enabled(ModelDeployment(model_deployment(gateway=g)), build_registry())
        for g in ({"enabled": True}, {"enabled": False}, {})
    ] == [True, False, False]


def test_unmanaged_pool_gets_pool_picker_and_route(shipped: ProviderRegistry) -> None:
    md = hydrated(shipped, gpu=1, provider="vllm", engine="vllm", gateway={"enabled": True})

    objects = render_gateway(
        md,
        {},
        GatewayTarget("inference", "gateways", istio=True),
        PINS,
        port=8000,
        selector=template_selector(md),
    )

    assert kinds(objects) == [
        "InferencePool/llama@models",
        "ServiceAccount/llama-epp@models",
        "Role/llama-epp@models",
        "RoleBinding/llama-epp@models",
        "ClusterRole/models.llama-epp@",
        "ClusterRoleBinding/models.llama-epp@",
        "ConfigMap/llama-epp@models",
        "Deployment/llama-epp@models",
        "Service/llama-epp@models",
        "DestinationRule/llama-epp@models",
        "HTTPRoute/llama@models",
    ]
    pool, route = objects[0], objects[-1]
    assert pool["spec"] == {
        "selector": {"matchLabels": {"airunway.ai/model-deployment": "llama"}},
        "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {
            "group": "",
            "kind": "Service",
            "name": "llama-epp",
            "port": {"number": 9002},
            "failureMode": "FailClose",
        },
    }
    assert route["spec"] == {
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
                            {"type": "Exact", "name": "X-Gateway-Model-Name", "value": "org/model"}
                        ],
                    }
                ],
                "backendRefs": [
                    {
                        "group": "inference.networking.k8s.io",
                        "kind": "InferencePool",
                        "name": "llama",
                        "weight": 1,
                    }
                ],
                "timeouts": {"request": "300s"},
            }
        ],
    }
    picker = objects[7]["spec"]["template"]["spec"]["containers"][0]
    assert picker["image"] == f"registry.k8s.io/gateway-api-inference-extension/epp:{PINS.gaie}"


def test_llmd_supplies_its_own_picker_image_and_config(shipped: ProviderRegistry) -> None:
    md = hydrated(shipped, gpu=1, provider="llmd", engine="vllm", gateway={"enabled": True})
    capabilities = shipped.configs["llmd"].gateway("vllm")

    objects = render_gateway(
        md, capabilities, TARGET, PINS, port=8000, selector=template_selector(md)
    )
    config_map = next(o for o in objects if o["kind"] == "ConfigMap")
    deployment = next(o for o in objects if o["kind"] == "Deployment")

    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        == f"ghcr.io/llm-d/llm-d-inference-scheduler:v{PINS.pin('llmd')}"
    )
    assert config_map["data"]["default-plugins.yaml"].startswith(
        "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:"
    )


def test_provider_managed_pool_gets_only_a_route_and_a_grant_across_namespaces(
    shipped: ProviderRegistry,
) -> None:
    md = hydrated(shipped, gpu=1, gateway={"enabled": True})
    capabilities = {
        "managesInferencePool": True,
        "inferencePoolNamePattern": "{name}-pool",
        "inferencePoolNamespace": "dynamo-system",
    }

    objects = render_gateway(
        md, capabilities, TARGET, PINS, port=8000, selector=template_selector(md)
    )

    assert kinds(objects) == [
        "HTTPRoute/llama@models",
        "ReferenceGrant/llama-pool-models@dynamo-system",
    ]
    assert objects[0]["spec"]["rules"][0]["backendRefs"] == [
        {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": "llama-pool",
            "weight": 1,
            "namespace": "dynamo-system",
        }
    ]
    assert objects[1]["spec"] == {
        "from": [
            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "models"}
        ],
        "to": [
            {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama-pool"}
        ],
    }


def test_a_bring_your_own_route_is_not_rendered(shipped: ProviderRegistry) -> None:
    md = hydrated(
        shipped,
        gpu=1,
        provider="vllm",
        engine="vllm",
        gateway={"enabled": True, "httpRouteRef": "mine"},
    )

    assert "HTTPRoute" not in [
        o["kind"]
        for o in render_gateway(md, {}, TARGET, PINS, port=8000, selector=template_selector(md))
    ]


def test_picker_may_review_tokens_and_access_for_its_metrics_and_nothing_more(
    shipped: ProviderRegistry,
) -> None:
    """GAIE v1.5.0 guards the picker's /metrics by default (pkg/epp/server/options.go:116); its
    chart grants the two cluster-scoped creates that needs (epplib/templates/_rbac.yaml)."""
    md = hydrated(shipped, gpu=1, provider="vllm", engine="vllm", gateway={"enabled": True})

    objects = render_gateway(md, {}, TARGET, PINS, port=8000, selector=template_selector(md))
    cluster = [o for o in objects if o["kind"].startswith("Cluster")]

    meta = {
        "name": "models.llama-epp",
        "labels": {
            "app.kubernetes.io/managed-by": "runway",
            "airunway.ai/model-deployment": "llama",
            "app.kubernetes.io/name": "llama-epp",
            "app.kubernetes.io/instance": "llama",
        },
        "annotations": {"airunway.ai/rendered-from": "ModelDeployment/models/llama"},
    }
    assert cluster == [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta,
            "rules": [
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["tokenreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["subjectaccessreviews"],
                    "verbs": ["create"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "models.llama-epp",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "llama-epp", "namespace": "models"}],
        },
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [(("c", "a-b"), ("b-c", "a")), (("models", "llama"), ("other", "llama"))],
    ids=["dash-joined-names-would-collide", "same-name-two-namespaces"],
)
def test_two_tenants_pickers_never_share_a_cluster_binding(
    shipped: ProviderRegistry, first: tuple[str, str], second: tuple[str, str]
) -> None:
    def names(namespace: str, name: str) -> set[str]:
        md = ModelDeployment(
            hydrate(
                model_deployment(
                    name,
                    namespace,
                    gpu=1,
                    provider="vllm",
                    engine="vllm",
                    gateway={"enabled": True},
                ),
                registry=shipped,
            ).obj
        )
        objects = render_gateway(md, {}, TARGET, PINS, port=8000, selector=template_selector(md))
        return {o["metadata"]["name"] for o in objects if o["kind"].startswith("Cluster")}

    assert names(*first).isdisjoint(names(*second))
