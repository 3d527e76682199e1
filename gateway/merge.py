"""The merge boundary: ModelDeployments and ExternalModelProviders in, the desired LiteLLM model
list out. This is the one place the two kinds meet (seed 004), so it is where an ambiguous
servedName is refused: a name claimed more than once (across the kinds, by two providers, or twice
by one provider) registers no claimant at all, and every claimant is reported. A name that is not
literal (a wildcard LiteLLM would expand) is never registered.

`settle` then applies what LiteLLM routes now: the claimant already registered and routable under
a name keeps it and every newcomer is refused; a name LiteLLM routes to an entry runway did not
create refuses every runway claimant (joining its group would take a share of its traffic).

Pure: no I/O, no Secret values (a desired model carries only a reference to its Secret).
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.admission.configs import requested_by
from core.admission.entry import admit_object
from core.admission.verdict import EMP, MD
from core.checks.gateway import gateway_ref
from core.fields.errors import FieldError, Reason
from core.model.destinations import NO_DESTINATIONS, Destinations
from core.model.kinds import (
    DEFAULT_NAMESPACE,
    EXTERNAL_MODEL_PROVIDER,
    MODEL_DEPLOYMENT,
    ApiKind,
    ExternalModelProvider,
    ModelDeployment,
    dig,
)
from core.model.names import NameRule, name_problem
from core.model.servednames import LITERAL, engine_model_name, is_literal, served_name
from core.model.versions import Versions
from core.rendering.inferencegateway import capabilities_of, is_enabled
from core.selection.configs import ProviderRegistry

ID_PREFIX = "runway:"
GATEWAY = ApiKind("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
KIND_SHORT = {EXTERNAL_MODEL_PROVIDER: "emp", MODEL_DEPLOYMENT: "md"}


@dataclass(frozen=True, slots=True, order=True)
class Owner:
    """The object that claims a servedName."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class SecretRef:
    namespace: str
    name: str
    key: str


@dataclass(frozen=True, slots=True)
class DesiredModel:
    """One LiteLLM entry to register: the public name, where it goes, and (by reference) its key."""

    served_name: str
    owner: Owner
    api_base: str
    upstream_model: str
    mode: str = "chat"
    secret: SecretRef | None = None
    requested_by: str | None = None

    @property
    def id(self) -> str:
        return model_id(self.owner, self.served_name)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A servedName claimed more than once, or held by an established registration; every claim
    is listed (an owner twice if it claims the name twice). `holder` names the registration that
    keeps the name (None: nobody keeps it); `kept` is that holder when it is a claimant."""

    served_name: str
    claimants: tuple[Owner, ...]
    holder: str | None = None
    kept: Owner | None = None

    def others(self, owner: Owner) -> list[Owner]:
        """The claimants other than `owner` (itself again when it claims the name twice)."""
        rest = list(self.claimants)
        rest.remove(owner)
        return rest


@dataclass(frozen=True, slots=True)
class Skipped:
    """An object (or one of its names) that takes no part, and why."""

    owner: Owner
    reason: str
    served_name: str | None = None


@dataclass(frozen=True)
class Plan:
    models: tuple[DesiredModel, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    providers: tuple[Owner, ...] = field(default=())  # every ExternalModelProvider seen
    contested: tuple[DesiredModel, ...] = ()  # the routable claims of names in conflicts

    @property
    def is_clean(self) -> bool:
        """No servedName in conflict and no object refused as invalid (a name skipped only
        because it cannot be routed here is not a failure)."""
        return not self.conflicts and all(s.served_name is not None for s in self.skipped)


@dataclass(frozen=True, slots=True)
class Registration:
    """A name LiteLLM routes now (in /model/info and /v1/models): runway's entry of `owner`, or
    (owner None) an entry runway did not create, named by its id."""

    served_name: str
    owner: Owner | None
    entry_id: str

    def __str__(self) -> str:
        if self.owner is not None:
            return str(self.owner)
        return f"LiteLLM entry {self.entry_id or '(no id)'} (not created by runway)"


@dataclass(frozen=True, slots=True)
class _Claim:
    served_name: str
    owner: Owner
    model: DesiredModel | None  # None: claims the name but cannot be routed (see skipped)


def model_id(owner: Owner, served: str) -> str:
    """The stable model_info.id of an entry: derived from the owner and the name, so the sync finds,
    updates and deletes its own entries without looking names up. Namespaces and names never hold
    a colon, so the servedName (which may) is unambiguous as the last part."""
    return f"{ID_PREFIX}{KIND_SHORT[owner.kind]}:{owner.namespace}:{owner.name}:{served}"


def owner_of(obj: Mapping[str, Any]) -> Owner:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return Owner(
        str(obj.get("kind")),
        str(dig(meta, "namespace") or DEFAULT_NAMESPACE),
        str(dig(meta, "name") or ""),
    )


def plan(
    deployments: Sequence[Mapping[str, Any]],
    providers: Sequence[Mapping[str, Any]],
    *,
    registry: ProviderRegistry,
    pins: Versions,
    gateway_url: str | None = None,
    destinations: Destinations = NO_DESTINATIONS,
    gateways: Mapping[str, str] | None = None,
) -> Plan:
    """The desired model list, every ambiguous name, and what was skipped. A ModelDeployment's
    entry points at the Service its provider renders or its operator creates (or, when
    spec.gateway.enabled, at `gateway_url`, or at its own Gateway's URL in `gateways`, by
    `namespace/name`, when it names one: gateway_url_of), with no key; a provider's entries at
    its base URL with its Secret."""
    claims: list[_Claim] = []
    skipped: list[Skipped] = []
    for obj in deployments:
        found, skip = _deployment_claim(
            obj, registry=registry, pins=pins, gateway_url=gateway_url, gateways=gateways or {}
        )
        claims += found
        skipped += skip
    for obj in providers:
        found, skip = _provider_claims(obj, registry, destinations)
        claims += found
        skipped += skip
    # Admission refuses such names; objects stored before that rule (or written past the
    # webhook) still never reach LiteLLM as a pattern.
    literal = [c for c in claims if is_literal(c.served_name)]
    skipped += [
        Skipped(c.owner, f"name {c.served_name!r} {LITERAL}", c.served_name)
        for c in claims
        if not is_literal(c.served_name)
    ]
    by_name: dict[str, list[_Claim]] = defaultdict(list)
    for claim in literal:
        by_name[claim.served_name].append(claim)
    models, conflicts, contested = [], [], []
    for name in sorted(by_name):
        group = by_name[name]
        if len(group) > 1:
            conflicts.append(Conflict(name, tuple(sorted(c.owner for c in group))))
            contested += sorted((c.model for c in group if c.model), key=lambda m: m.owner)
        elif group[0].model is not None:
            models.append(group[0].model)
    return Plan(
        tuple(models),
        tuple(conflicts),
        tuple(sorted(skipped, key=lambda s: (s.owner, s.served_name or ""))),
        tuple(sorted({owner_of(p) for p in providers})),
        tuple(contested),
    )


def _deployment_claim(
    obj: Mapping[str, Any],
    *,
    registry: ProviderRegistry,
    pins: Versions,
    gateway_url: str | None,
    gateways: Mapping[str, str],
) -> tuple[list[_Claim], list[Skipped]]:
    owner = owner_of(obj)
    source = {k: v for k, v in obj.items() if k != "status"}
    verdict = admit_object(source, registry=registry, kind=MD)
    if not verdict.allowed:
        detail = "; ".join(str(e) for e in verdict.errors)
        return [], [Skipped(owner, f"rejected, so not served: {detail}")]
    md = ModelDeployment(verdict.object)
    capabilities = capabilities_of(md, registry)
    fixed = registry.served_as(md)
    name = served_name(md, capabilities, fixed)
    if is_enabled(md, registry):
        own = gateway_ref(md)
        if own is not None:  # its own Gateway, in its namespace (core/checks/gateway.py)
            key = "/".join(own)
            url = gateways.get(key)
            reason = (
                f"spec.gateway.gatewayRef: its entry points at its own Gateway {key}, "
                "which has no address yet (status.addresses)"
            )
        else:
            url = gateway_url
            reason = "spec.gateway.enabled: its entry points at the Gateway; pass --gateway-url"
        if not url:
            return [_Claim(name, owner, None)], [Skipped(owner, reason, name)]
        model = DesiredModel(name, owner, url, name)
        return [_Claim(name, owner, model)], []
    service = _service_url(md, registry, pins)
    if service is None:
        reason = (
            f"provider {md.provider_name} serves no Service this model can be reached at; "
            "set spec.gateway.enabled to route it through the Gateway"
        )
        return [_Claim(name, owner, None)], [Skipped(owner, reason, name)]
    model = DesiredModel(name, owner, service, engine_model_name(md, capabilities, fixed))
    return [_Claim(name, owner, model)], []


def _service_url(md: ModelDeployment, registry: ProviderRegistry, pins: Versions) -> str | None:
    """The in-cluster URL of the Service the provider renders (the one named after the
    ModelDeployment first), else of the Service its operator creates for the model (the
    plug-in's pods.operator_service: KAITO's Workspace Service, KubeRay's serve Service,
    Dynamo's Frontend), or None when there is neither."""
    plugin = registry.plugins[md.provider_name]
    rendered = plugin.render(md, pins, registry.context(md.provider_name))
    services = [o for o in rendered if o["kind"] == "Service"]
    if services:
        service = min(
            services, key=lambda s: (s["metadata"]["name"] != md.name, s["metadata"]["name"])
        )
        return _url(md, service["metadata"]["name"], service["spec"]["ports"][0]["port"])
    made = plugin.pods.operator_service(md)
    return None if made is None else _url(md, made.name, made.port)


def _url(md: ModelDeployment, service: str, port: int) -> str:
    return f"http://{service}.{md.namespace}.svc.cluster.local:{port}/v1"


def gateway_url_of(gateway: Mapping[str, Any]) -> str | None:
    """The base URL at which a Gateway serves its routes, from what its controller reports:
    the first of status.addresses (Gateway API <GATEWAY_API_VERSION> apis/v1/gateway_types.go GatewayStatus,
    written by the Gateway's controller; AI Runway reads the endpoint from there too) and the
    port of its first HTTP listener; None while it has no address or no HTTP listener."""
    addresses = [a for a in dig(gateway, "status", "addresses") or () if isinstance(a, Mapping)]
    listeners = [
        item
        for item in dig(gateway, "spec", "listeners") or ()
        if isinstance(item, Mapping) and item.get("protocol") == "HTTP"
    ]
    if not addresses or not listeners:
        return None
    host, port = _host(addresses[0].get("value")), listeners[0].get("port")
    if host is None or not isinstance(port, int) or isinstance(port, bool):
        return None
    if not 1 <= port <= 65535:
        return None
    return f"http://{host}/v1" if port == 80 else f"http://{host}:{port}/v1"


def _host(value: Any) -> str | None:
    """An address as a URL's host: an IP address (IPv6 in brackets) or a DNS name; None for
    anything else (a status is data, and a value with a path or a port in it is no address)."""
    if not isinstance(value, str):
        return None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return value if name_problem(value, NameRule.SUBDOMAIN) is None else None
    return f"[{address}]" if address.version == 6 else str(address)


def is_gateway(obj: Mapping[str, Any]) -> bool:
    """A Gateway API Gateway (any version of gateway.networking.k8s.io)."""
    api = obj.get("apiVersion")
    return (
        obj.get("kind") == GATEWAY.kind
        and isinstance(api, str)
        and api.partition("/")[0] == GATEWAY.group
    )


def gateway_urls(gateways: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """`namespace/name` -> base URL of every Gateway that has one (gateway_url_of)."""
    found = {}
    for gateway in gateways:
        url = gateway_url_of(gateway)
        if url is not None:
            owner = owner_of(gateway)
            found[f"{owner.namespace}/{owner.name}"] = url
    return found


def _provider_claims(
    obj: Mapping[str, Any], registry: ProviderRegistry, destinations: Destinations
) -> tuple[list[_Claim], list[Skipped]]:
    owner = owner_of(obj)
    # A name offered twice by one provider is ambiguous like any other: the merge reports it as a
    # conflict (admission refuses it too); every other admission error skips the provider.
    checked = admit_object(obj, registry=registry, kind=EMP, destinations=destinations).errors
    errors = [
        e for e in checked if not (isinstance(e, FieldError) and e.reason == Reason.DUPLICATE)
    ]
    if errors:
        return [], [Skipped(owner, "; ".join(str(e) for e in errors))]
    emp = ExternalModelProvider(obj)
    secret = (
        SecretRef(owner.namespace, emp.secret_name, emp.secret_key) if emp.secret_name else None
    )
    who = requested_by(obj)
    claims = []
    for model in dig(obj, "spec", "models"):
        served = model["servedName"]
        desired = DesiredModel(
            served,
            owner,
            emp.base_url,
            model.get("upstreamModel") or served,
            model.get("mode") or "chat",
            secret,
            who,
        )
        claims.append(_Claim(served, owner, desired))
    return claims, []


def settle(result: Plan, registered: Sequence[Registration]) -> Plan:
    """`result` with what LiteLLM routes now applied: under a name claimed more than once, the
    one claimant registered under it keeps it (its model is desired, the others are refused); a
    name routed to an entry runway did not create refuses every claimant. Two registered
    claimants, or none, leave the conflict as it is (nobody is registered)."""
    holders: dict[str, list[Registration]] = defaultdict(list)
    for entry in registered:
        holders[entry.served_name].append(entry)
    conflicts = {c.served_name: c for c in result.conflicts}
    models = {m.served_name: m for m in result.models}
    claimed = {
        **{n: c.claimants for n, c in conflicts.items()},
        **{n: (m.owner,) for n, m in models.items()},
    }
    for name in sorted(set(claimed) & set(holders)):
        held = holders[name]
        foreign = [h for h in held if h.owner is None]
        if foreign:
            models.pop(name, None)
            conflicts[name] = Conflict(name, claimed[name], str(min(foreign, key=str)))
            continue
        owners = sorted({h.owner for h in held if h.owner is not None and h.owner in claimed[name]})
        if name not in conflicts or len(owners) != 1:
            continue
        keeper = owners[0]
        conflicts[name] = Conflict(name, claimed[name], str(keeper), keeper)
        model = next(
            (m for m in result.contested if (m.served_name, m.owner) == (name, keeper)), None
        )
        if model is not None:
            models[name] = model
    return replace(
        result,
        models=tuple(models[n] for n in sorted(models)),
        conflicts=tuple(conflicts[n] for n in sorted(conflicts)),
    )


def model_line(model: DesiredModel) -> str:
    """One registered model as `runway gateway-plan` prints it."""
    who = f"  requested-by={model.requested_by}" if model.requested_by else ""
    return f"model     {model.served_name}  {model.owner}  -> {model.api_base}{who}"


def conflict_line(conflict: Conflict) -> str:
    """One ambiguous servedName as `runway gateway-plan` prints it, every claimant named."""
    claimants = ", ".join(str(o) for o in conflict.claimants)
    return f"CONFLICT  {conflict.served_name}  claimed by {claimants}; none is registered"


def skipped_line(skip: Skipped) -> str:
    """One object (or name) that takes no part, as `runway gateway-plan` prints it."""
    name = f"{skip.served_name}  " if skip.served_name else ""
    return f"skipped   {name}{skip.owner}: {skip.reason}"


def plan_lines(result: Plan) -> list[str]:
    """The whole plan as `runway gateway-plan` prints it: models, conflicts, then skipped."""
    return (
        [model_line(m) for m in result.models]
        + [conflict_line(c) for c in result.conflicts]
        + [skipped_line(s) for s in result.skipped]
    )


def split(
    objects: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """ModelDeployments and ExternalModelProviders from a mixed list (other kinds are ignored)."""
    deployments = [o for o in objects if o.get("kind") == MODEL_DEPLOYMENT]
    providers = [o for o in objects if o.get("kind") == EXTERNAL_MODEL_PROVIDER]
    return deployments, providers
