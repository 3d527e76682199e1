"""`--gateway NAMESPACE/NAME`, spelled once for the commands that take it: `render` (the Gateway
the HTTPRoutes of `spec.gateway.enabled: true` attach to) and `validate` (which then knows that
`render` will be given one). Apart from cli.options, which every command imports, so that only
these two import the gateway renderer's parser."""

from __future__ import annotations

import argparse

from core.fields.errors import SourceError
from core.rendering.inferencegateway import GatewayTarget, parse_gateway


def add_gateway(parser: argparse.ArgumentParser, help: str) -> None:  # argparse's word
    """`--gateway NAMESPACE/NAME`: the Gateway the HTTPRoutes of spec.gateway.enabled attach to."""
    parser.add_argument("--gateway", metavar="NAMESPACE/NAME", help=help)


def gateway_target(value: str | None, *, istio: bool = False) -> GatewayTarget | None:
    """--gateway, parsed (None when not given); a malformed one is a usage error naming it."""
    if value is None:
        return None
    target = parse_gateway(value, istio=istio)
    if isinstance(target, str):
        raise SourceError("--gateway", target)
    return target
