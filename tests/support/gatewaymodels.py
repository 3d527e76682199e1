"""ModelDeployments and ExternalModelProviders as the gateway merge takes them, and one merge run."""

from __future__ import annotations

from typing import Any

from core.selection.configs import ProviderRegistry
from gateway.merge import DesiredModel, Owner, Plan, SecretRef, plan
from kubeio.shipped import bundled_versions
from tests.support.builders import model_deployment

PINS = bundled_versions()
GATEWAY_URL = "http://inference-gateway.gateways.svc.cluster.local/v1"


EMP = "ExternalModelProvider"


MD = "ModelDeployment"


def md(name: str, served: str, *, namespace: str = "models", **kw: Any) -> dict[str, Any]:
    return model_deployment(
        name,
        namespace,
        model={"id": "org/model", "servedName": served},
        gpu=1,
        provider=kw.pop("provider", "vllm"),
        **kw,
    )


def run(shipped: ProviderRegistry, deployments: Any = (), providers: Any = ()) -> Plan:
    return plan(deployments, providers, registry=shipped, pins=PINS, gateway_url=GATEWAY_URL)


def provider_model(name: str, served: str, **kw: Any) -> DesiredModel:
    return DesiredModel(
        served,
        Owner(EMP, "gw", name),
        "https://api.example.com/v1",
        served,
        "chat",
        SecretRef("gw", "provider-key", "apiKey"),
        **kw,
    )
