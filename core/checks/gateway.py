"""spec.gateway.gatewayRef (a Gateway of the model's own, AI Runway #94) and spec.gateway.poolRef
(an InferencePool of the user's own, AI Runway #97): the rules that keep them runnable and keep a
tenant inside its namespace.

Gateway API <GATEWAY_API_VERSION> leaves a cross-namespace reference to the referent's owner: a
route attaches to another namespace's Gateway only when a listener's allowedRoutes admits the
route's namespace (apis/v1/gateway_types.go:820-828, `from: Same` by default; shared_types.go:60-67
for parentRefs), and a backendRef reaches another namespace's object only when a ReferenceGrant
there allows it (shared_types.go:274-279, httproute_types.go:1792-1796). Runway renders without
reading the cluster, so it can prove neither: it cannot see a listener's allowedRoutes, and a
ReferenceGrant it rendered into another namespace would be the tenant granting itself access. So
both references stay in the model's namespace. The Gateway the platform offers every model is the
one the render is given (`runway render --gateway`): a model that names no gatewayRef attaches
there, and a tenant can never choose a Gateway the platform did not offer it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import DEFAULT_NAMESPACE, ModelDeployment, dig
from core.model.names import NameRule, name_problem

AT = FieldPath.root("spec", "gateway")
GATEWAY_REF, POOL_REF = "gatewayRef", "poolRef"
OTHER_GATEWAY = (
    "a Gateway in another namespace takes this route only if one of its listeners' "
    "allowedRoutes admits namespace {own} (Gateway API v1.5.1 apis/v1/gateway_types.go:820-828; "
    "the default is the Gateway's own namespace), which Runway cannot see when it renders, and a "
    "model must not choose a Gateway the platform did not offer it: name a Gateway in {own}, or "
    "omit gatewayRef to attach to the platform's Gateway (runway render --gateway)"
)
OTHER_POOL = (
    "an HTTPRoute reaches an InferencePool in another namespace only through a ReferenceGrant "
    "there (Gateway API v1.5.1 apis/v1/shared_types.go:274-279), which that namespace's owner "
    "writes and Runway cannot see when it renders; one Runway wrote would be this model granting "
    "itself access: name an InferencePool in {own}"
)


def check_gateway_refs(md: ModelDeployment, capabilities: Mapping[str, Any]) -> list[FieldError]:
    """The rules on spec.gateway.gatewayRef and poolRef of a hydrated ModelDeployment (none
    when neither is set); `capabilities`: the gateway capabilities of its provider and engine."""
    gateway = dig(md.spec, "gateway")
    if not isinstance(gateway, Mapping):
        return []
    manages_pool = bool(capabilities.get("managesInferencePool"))
    refs = [key for key in (GATEWAY_REF, POOL_REF) if isinstance(gateway.get(key), Mapping)]
    errors: list[FieldError] = []
    for key in refs:
        errors += _ref(md, gateway[key], key)
        if gateway.get("enabled") is not True:
            detail = "renders nothing unless spec.gateway.enabled is true: set it, or remove this"
            errors.append(FieldError(str(AT.child(key)), Reason.INVALID, detail))
    if GATEWAY_REF in refs and gateway.get("httpRouteRef"):
        detail = (
            "spec.gateway.httpRouteRef routes with your own HTTPRoute, whose parentRefs choose "
            "its Gateway: set one or the other"
        )
        errors.append(FieldError(str(AT.child(GATEWAY_REF)), Reason.FORBIDDEN, detail))
    if POOL_REF in refs and manages_pool:
        detail = (
            f"provider {md.provider_name}'s operator creates this model's InferencePool itself "
            "(managesInferencePool): a pool of your own would route to pods it does not select"
        )
        errors.append(FieldError(str(AT.child(POOL_REF)), Reason.FORBIDDEN, detail))
    return errors


def _ref(md: ModelDeployment, ref: Mapping[str, Any], key: str) -> list[FieldError]:
    at = AT.child(key)
    own = md.namespace or DEFAULT_NAMESPACE
    errors = []
    problem = name_problem(ref.get("name"), NameRule.SUBDOMAIN)
    if problem is not None:
        errors.append(FieldError(str(at.child("name")), Reason.INVALID, problem))
    namespace = ref.get("namespace")
    if namespace is None or namespace == own:
        return errors
    problem = name_problem(namespace, NameRule.LABEL)
    if problem is not None:
        errors.append(FieldError(str(at.child("namespace")), Reason.INVALID, problem))
        return errors
    why = OTHER_GATEWAY if key == GATEWAY_REF else OTHER_POOL
    errors.append(FieldError(str(at.child("namespace")), Reason.FORBIDDEN, why.format(own=own)))
    return errors


def gateway_ref(md: ModelDeployment) -> tuple[str, str] | None:
    """(namespace, name) of the model's own Gateway (spec.gateway.gatewayRef), or None."""
    ref = dig(md.spec, "gateway", GATEWAY_REF)
    if not isinstance(ref, Mapping):
        return None
    return str(ref.get("namespace") or md.namespace or DEFAULT_NAMESPACE), str(ref["name"])


def pool_ref(md: ModelDeployment) -> str | None:
    """The name of the user's own InferencePool in the model's namespace (spec.gateway.poolRef),
    or None."""
    ref = dig(md.spec, "gateway", POOL_REF)
    return str(ref["name"]) if isinstance(ref, Mapping) else None
