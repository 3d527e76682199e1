"""The upstream kinds a ModelDeployment's objects may have, gathered from the providers (apart
from kubeio.objects, which the render imports: this one loads every provider package)."""

from __future__ import annotations

from core.model.plugin import UpstreamKind
from core.rendering.inferencegateway import GATEWAY_KINDS
from core.rendering.leaderworkerset import LEADERWORKERSETS
from core.rendering.pods import DEPLOYMENTS
from providers.modules import plugins


def upstream_kinds() -> tuple[UpstreamKind, ...]:
    """The upstream kinds a ModelDeployment's objects may have, as (group, version, plural,
    kind): apps/v1 Deployments and LeaderWorkerSets (the core renders both for several
    providers: core/rendering/engines.py, core/rendering/leaderworkerset.py), the kinds each provider declares (what its status hook reads)
    and the gateway's (core status gateway_state), each once. The status controller watches
    them; the portal's Deployments page shows them."""
    kinds = [
        DEPLOYMENTS,
        LEADERWORKERSETS,
        *(k for p in plugins() for k in p.watched.kinds),
        *GATEWAY_KINDS,
    ]
    return tuple(dict.fromkeys(kinds))
