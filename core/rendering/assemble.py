"""Everything rendered for one admitted ModelDeployment: its provider's objects, then its gateway
objects. The renderer and gateway-sync's view of a model both come from here."""

from __future__ import annotations

from typing import Any

from core.model.kinds import ModelDeployment
from core.model.versions import Versions
from core.rendering.inferencegateway import (
    GatewayTarget,
    capabilities_of,
    configured_picker_config,
    is_enabled,
    render_gateway,
)
from core.selection.configs import ProviderRegistry


def render_model(
    md: ModelDeployment,
    registry: ProviderRegistry,
    pins: Versions,
    gateway: GatewayTarget | None,
) -> list[dict[str, Any]]:
    """The objects for `md`, admitted with `registry` (so its provider has a plug-in). Gateway
    objects need `gateway`: the caller refuses an enabled gateway without one."""
    plugin = registry.plugins[md.provider_name]
    objects = plugin.render(md, pins, registry.context(md.provider_name))
    if is_enabled(md, registry) and gateway is not None:
        capabilities = capabilities_of(md, registry)
        objects += render_gateway(
            md,
            capabilities,
            gateway,
            pins,
            port=plugin.pods.port(md),
            selector=plugin.pods.selector(md),
            picker_config=plugin.rules.picker_config(
                md, configured_picker_config(capabilities), registry.context(md.provider_name)
            ),
            served_as=registry.served_as(md),
        )
    return objects
