"""The merge boundary: ModelDeployments + ExternalModelProviders -> desired models and conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.hydrate import hydrate
from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.plugin import ServiceEndpoint
from core.model.servednames import LITERAL, served_name
from core.rendering.inferencegateway import GatewayTarget, capabilities_of, render_gateway
from core.rendering.pods import template_selector
from core.selection.configs import ProviderRegistry
from gateway.merge import (
    Conflict,
    DesiredModel,
    Owner,
    Plan,
    Skipped,
    gateway_url_of,
    gateway_urls,
    plan,
)
from kubeio.shipped import bundled_versions
from tests.support.builders import external_model_provider, model_deployment
from tests.support.gatewaymodels import EMP, MD, md, provider_model, run

PINS = bundled_versions()
TARGET = GatewayTarget("inference", "gateways")
GATEWAY_URL = "http://inference-gateway.gateways.svc.cluster.local/v1"


def emp(name: str, *served: str, namespace: str = "gw", **meta: Any) -> dict[str, Any]:
    obj = external_model_provider(name, namespace, models=[{"servedName": s} for s in served])
    obj["metadata"].update(meta)
    return obj


def routed(hydrated: ModelDeployment, shipped: ProviderRegistry) -> dict[str, Any]:
    """The HTTPRoute the renderer emits for `hydrated` (render_model calls exactly this)."""
    objects = render_gateway(
        hydrated,
        capabilities_of(hydrated, shipped),
        TARGET,
        PINS,
        port=8000,
        selector=template_selector(hydrated),
    )
    (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]
    return route


def test_unique_names_are_all_desired(shipped: ProviderRegistry) -> None:
    result = run(shipped, [md("llama", "llama-8b")], [emp("openai", "gpt-4o", "gpt-4o-mini")])

    assert result == Plan(
        models=(
            provider_model("openai", "gpt-4o"),
            provider_model("openai", "gpt-4o-mini"),
            DesiredModel(
                "llama-8b",
                Owner(MD, "models", "llama"),
                "http://llama.models.svc.cluster.local:8000/v1",
                "llama-8b",
            ),
        ),
        providers=(Owner(EMP, "gw", "openai"),),
    )
    assert [m.id for m in result.models] == [
        "runway:emp:gw:openai:gpt-4o",
        "runway:emp:gw:openai:gpt-4o-mini",
        "runway:md:models:llama:llama-8b",
    ]


def test_a_name_claimed_across_kinds_registers_neither(shipped: ProviderRegistry) -> None:
    result = run(shipped, [md("llama", "shared")], [emp("openai", "shared", "gpt-4o")])

    assert result.models == (provider_model("openai", "gpt-4o"),)
    assert result.conflicts == (
        Conflict("shared", (Owner(EMP, "gw", "openai"), Owner(MD, "models", "llama"))),
    )


def test_a_name_claimed_by_two_providers_registers_neither(shipped: ProviderRegistry) -> None:
    result = run(shipped, [], [emp("b", "gpt-4o"), emp("a", "gpt-4o", "other")])

    assert result.models == (provider_model("a", "other"),)
    assert result.conflicts == (Conflict("gpt-4o", (Owner(EMP, "gw", "a"), Owner(EMP, "gw", "b"))),)
    assert result.conflicts[0].others(Owner(EMP, "gw", "a")) == [Owner(EMP, "gw", "b")]


def test_a_name_offered_twice_by_one_provider_is_ambiguous(shipped: ProviderRegistry) -> None:
    result = run(shipped, [], [emp("a", "gpt-4o", "gpt-4o", "other")])

    assert result.models == (provider_model("a", "other"),)
    assert result.conflicts == (Conflict("gpt-4o", (Owner(EMP, "gw", "a"), Owner(EMP, "gw", "a"))),)
    assert result.conflicts[0].others(Owner(EMP, "gw", "a")) == [Owner(EMP, "gw", "a")]


def test_two_model_deployments_with_one_name_conflict(shipped: ProviderRegistry) -> None:
    result = run(shipped, [md("a", "same"), md("b", "same", namespace="other")])

    assert result.models == ()
    assert result.conflicts == (
        Conflict("same", (Owner(MD, "models", "a"), Owner(MD, "other", "b"))),
    )


def test_deleting_one_claimant_lets_the_other_register(shipped: ProviderRegistry) -> None:
    before = run(shipped, [md("llama", "shared")], [emp("openai", "shared")])
    after = run(shipped, [], [emp("openai", "shared")])

    assert (before.models, [c.served_name for c in before.conflicts]) == ((), ["shared"])
    assert (after.models, after.conflicts) == ((provider_model("openai", "shared"),), ())


def test_requested_by_is_carried_to_the_desired_model(shipped: ProviderRegistry) -> None:
    annotations = {"gateway.tokenfactory.mirantis.com/requested-by": "alice@example.com"}
    result = run(shipped, [], [emp("openai", "gpt-4o", annotations=annotations)])

    assert result.models == (provider_model("openai", "gpt-4o", requested_by="alice@example.com"),)


def test_gateway_enabled_model_points_at_the_gateway(shipped: ProviderRegistry) -> None:
    gateway = {"enabled": True, "modelName": "routed-llama"}
    result = run(shipped, [md("llama", "llama-8b", gateway=gateway)])

    assert result.models == (
        DesiredModel("routed-llama", Owner(MD, "models", "llama"), GATEWAY_URL, "routed-llama"),
    )


@pytest.mark.parametrize(
    ("provider", "model_id", "served", "url"),
    [
        # KAITO v0.10.0 pkg/workspace/manifests/manifests.go:66-91: <name>, port 80 -> 5000; a
        # preset serves under the preset's name (KAITO ignores servedName)
        (
            "kaito",
            "phi-4-mini-instruct",
            "phi-4-mini-instruct",
            "http://llama.models.svc.cluster.local:80/v1",
        ),
        # KubeRay v1.3.0 utils/util.go:292-294 <name>-serve-svc, constant.go:71 port 8000
        (
            "kuberay",
            "org/model",
            "shared",
            "http://llama-serve-svc.models.svc.cluster.local:8000/v1",
        ),
        # Dynamo: graph.go GetDynamoComponentName <name>-frontend, DynamoServicePort 8000
        ("dynamo", "org/model", "shared", "http://llama-frontend.models.svc.cluster.local:8000/v1"),
    ],
)
def test_a_model_served_by_its_operators_service_is_registered_at_that_service(
    shipped: ProviderRegistry, provider: str, model_id: str, served: str, url: str
) -> None:
    """Issue #43 row 9: the operator creates the Service Runway does not render; with the
    gateway off, the sync registers the model there instead of skipping it."""
    obj = md("llama", "shared", provider=provider, engine="vllm")
    obj["spec"]["model"]["id"] = model_id

    result = run(shipped, [obj])

    assert result == Plan(models=(DesiredModel(served, Owner(MD, "models", "llama"), url, served),))


def test_dynamo_behind_the_gateway_has_no_frontend_service(shipped: ProviderRegistry) -> None:
    """The graph behind a gateway has no Frontend (its workers' sidecars serve the picker), so
    the operator Service is the Gateway's to replace, never the sync's to guess."""
    plugin = shipped.plugins["dynamo"]
    gateway_on = ModelDeployment(
        hydrate(
            md("llama", "shared", provider="dynamo", gateway={"enabled": True}), registry=shipped
        ).obj
    )
    gateway_off = ModelDeployment(
        hydrate(md("llama", "shared", provider="dynamo"), registry=shipped).obj
    )

    assert [plugin.pods.operator_service(m) for m in (gateway_on, gateway_off)] == [
        None,
        ServiceEndpoint("llama-frontend", 8000),
    ]


def test_invalid_objects_are_skipped_with_the_reason(shipped: ProviderRegistry) -> None:
    bad_emp = emp("bad", "x")
    bad_emp["spec"]["baseURL"] = "http://[::1"
    bad_md = md("bad", "y", provider="no-such-provider")

    result = run(shipped, [bad_md], [bad_emp])

    assert (result.models, result.conflicts) == ((), ())
    assert [(s.owner, s.served_name) for s in result.skipped] == [
        (Owner(EMP, "gw", "bad"), None),
        (Owner(MD, "models", "bad"), None),
    ]
    assert (
        result.skipped[0].reason
        == "spec.baseURL: Invalid value: has an IPv6 address without its closing ]"
    )
    assert result.skipped[1].reason.startswith("rejected, so not served: ")


@pytest.mark.parametrize(
    ("provider", "gateway", "served", "expected"),
    [
        ("vllm", {"enabled": True, "modelName": "route-me"}, "served", "route-me"),
        ("vllm", {"enabled": True}, "served", "served"),
        ("kaito", {"enabled": True}, "served", "org/model"),  # KAITO ignores servedName
        ("vllm", {}, "served", "served"),
    ],
    ids=["gateway-model-name", "served-name", "provider-ignores-served-name", "no-gateway"],
)
def test_served_name_is_what_the_rendered_route_matches(
    shipped: ProviderRegistry,
    provider: str,
    gateway: dict[str, Any],
    served: str,
    expected: str,
) -> None:
    engine = "llamacpp" if provider == "kaito" else "vllm"
    obj = model_deployment(
        "llama",
        "models",
        model={"id": "org/model", "servedName": served},
        gpu=None if provider == "kaito" else 1,
        provider=provider,
        engine=engine,
        gateway=gateway,
    )
    hydrated = ModelDeployment(hydrate(obj, registry=shipped).obj)

    assert served_name(hydrated, capabilities_of(hydrated, shipped)) == expected
    if gateway:  # the HTTPRoute the renderer emits matches it
        (match,) = routed(hydrated, shipped)["spec"]["rules"][0]["matches"]
        assert match["headers"] == [
            {"type": "Exact", "name": "X-Gateway-Model-Name", "value": expected}
        ]


def test_a_model_id_that_is_not_literal_is_routed_but_never_registered(
    shipped: ProviderRegistry,
) -> None:
    # Where the served-name variants disagree (issue #19): with neither gateway.modelName nor
    # servedName, the name a client sends is spec.model.id, which admission does not hold to
    # the literal rule. The webhook admits it and the renderer's HTTPRoute matches it exactly
    # (no pattern there); the merge, which holds every name it registers to the rule, never
    # registers it in LiteLLM, where "*" would be a catch-all.
    obj = model_deployment(
        "wild", "models", model={"id": "*"}, gpu=1, provider="vllm", gateway={"enabled": True}
    )
    admitted = admit(obj, old=None, registry=shipped)
    hydrated = ModelDeployment(admitted.obj)
    route = routed(hydrated, shipped)

    assert (admitted.allowed, served_name(hydrated, capabilities_of(hydrated, shipped))) == (
        True,
        "*",
    )
    assert route["spec"]["rules"][0]["matches"][0]["headers"] == [
        {"type": "Exact", "name": "X-Gateway-Model-Name", "value": "*"}
    ]
    assert run(shipped, [obj]) == Plan(
        skipped=(Skipped(Owner(MD, "models", "wild"), f"name '*' {LITERAL}", "*"),)
    )


def own_gateway(addresses: list[Any], listeners: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "team-gateway", "namespace": "models"},
        "spec": {"gatewayClassName": "istio", "listeners": listeners},
        "status": {"addresses": addresses},
    }


HTTP = {"name": "http", "protocol": "HTTP", "port": 8080}


@pytest.mark.parametrize(
    ("gateway", "url"),
    [
        (own_gateway([{"type": "IPAddress", "value": "10.0.0.7"}], [HTTP]), "http://10.0.0.7:8080/v1"),
        (
            own_gateway([{"type": "Hostname", "value": "gw.models.svc.cluster.local"}], [{**HTTP, "port": 80}]),
            "http://gw.models.svc.cluster.local/v1",
        ),
        (own_gateway([{"value": "fd00::7"}], [{"protocol": "HTTPS", "port": 443}, HTTP]), "http://[fd00::7]:8080/v1"),
        (own_gateway([], [HTTP]), None),  # no address yet
        (own_gateway([{"value": "10.0.0.7"}], [{"protocol": "HTTPS", "port": 443}]), None),
        (own_gateway([{"value": "evil.example/path?x="}], [HTTP]), None),  # no address
        (own_gateway([{"value": "10.0.0.7:9999"}], [HTTP]), None),
        (own_gateway([{"value": "10.0.0.7"}], [{**HTTP, "port": "80"}]), None),
        (own_gateway([{"value": "10.0.0.7"}], [{**HTTP, "port": 70000}]), None),
        (own_gateway([{"value": "10.0.0.7"}], [{**HTTP, "port": True}]), None),
        ({"kind": "Gateway", "status": {"addresses": "10.0.0.7"}}, None),
    ],
)  # fmt: skip
def test_a_gateways_url_is_its_reported_address_and_http_port(
    gateway: dict[str, Any], url: str | None
) -> None:
    assert gateway_url_of(gateway) == url


def test_a_model_with_its_own_gateway_is_registered_at_that_gateway(
    shipped: ProviderRegistry,
) -> None:
    gateway = {"enabled": True, "gatewayRef": {"name": "team-gateway"}}
    deployments = [
        md("llama", "llama-8b", gateway=gateway),
        md("phi", "phi-4", gateway={"enabled": True}),
    ]
    found = own_gateway([{"type": "IPAddress", "value": "10.0.0.7"}], [HTTP])

    result = plan(
        deployments, [], registry=shipped, pins=PINS, gateway_url=GATEWAY_URL,
        gateways=gateway_urls([found]),
    )  # fmt: skip

    assert result == Plan(
        models=(
            DesiredModel("llama-8b", Owner(MD, "models", "llama"), "http://10.0.0.7:8080/v1", "llama-8b"),
            DesiredModel("phi-4", Owner(MD, "models", "phi"), GATEWAY_URL, "phi-4"),
        )
    )  # fmt: skip


def test_a_model_whose_own_gateway_has_no_address_is_skipped_never_sent_elsewhere(
    shipped: ProviderRegistry,
) -> None:
    gateway = {"enabled": True, "gatewayRef": {"name": "team-gateway"}}

    result = run(shipped, [md("llama", "llama-8b", gateway=gateway)])

    assert result == Plan(
        skipped=(
            Skipped(
                Owner(MD, "models", "llama"),
                "spec.gateway.gatewayRef: its entry points at its own Gateway "
                "models/team-gateway, which has no address yet (status.addresses)",
                "llama-8b",
            ),
        )
    )


def test_a_model_naming_another_namespaces_gateway_is_never_registered(
    shipped: ProviderRegistry,
) -> None:
    """Written past the webhook, the ref is still refused: the merge admits every object."""
    gateway = {"enabled": True, "gatewayRef": {"name": "inference", "namespace": "gateways"}}
    found = own_gateway([{"value": "10.0.0.9"}], [HTTP])
    found["metadata"]["namespace"] = "gateways"

    result = plan(
        [md("llama", "llama-8b", gateway=gateway)], [], registry=shipped, pins=PINS,
        gateway_url=GATEWAY_URL, gateways=gateway_urls([found]),
    )  # fmt: skip

    assert (result.models, [(s.owner, s.served_name) for s in result.skipped]) == (
        (),
        [(Owner(MD, "models", "llama"), None)],
    )
    assert result.skipped[0].reason.startswith(
        "rejected, so not served: spec.gateway.gatewayRef.namespace: Forbidden: "
    )
