"""Page 5, Gateway providers (the portal Providers screen of the gateway design): every
ExternalModelProvider with its phase, conditions, the served names it claims and who requested
it; and a composer (form or YAML) with admission's verdict and the merge-boundary check as
`runway gateway-plan` decides it, delivered through the shared outputs (`bundle`, and the
fragment in _gateway_verdict.html).

Offline the objects are those of the -f folders; live the ModelDeployments and
ExternalModelProviders the merge must weigh (cluster-wide) are read AS THE SIGNED-IN USER, so a
user sees only what RBAC lets them see and the page says when they may not; the
InferenceProviderConfigs are read with the portal's own client, as on the Providers page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes
from flask import Blueprint, render_template, request

from core.admission.configs import requested_by
from core.fields.errors import SourceError
from core.model.kinds import (
    EXTERNAL_MODEL_PROVIDER,
    EXTERNAL_MODEL_PROVIDERS,
    MODEL_DEPLOYMENTS,
    dig,
)
from gateway.merge import owner_of
from gateway.run import read_objects
from kubeio.client import api_failure
from ui.cluster import TIMEOUT
from ui.context import NavItem, cluster, portal, viewer
from ui.gateway_compose import (
    Form,
    Verdict,
    claimed_names,
    form_object,
    form_of,
    verdict,
    yaml_object,
)
from ui.outputs import Bundle, OutputError, Planned, relative_to_root
from ui.providers_configs import cluster_configs

blueprint = Blueprint("gateway", __name__)
NAV = NavItem("gateway.page", "Gateway providers", offline=True)


@dataclass(frozen=True, slots=True)
class Objects:
    """The objects the merge weighs, where they came from, and why they could not be read."""

    items: tuple[Mapping[str, Any], ...]
    origin: str
    problem: str = ""


@dataclass(frozen=True, slots=True)
class Listed:
    namespace: str
    name: str
    phase: str
    conditions: tuple[Mapping[str, str], ...]
    served: tuple[str, ...]
    requested_by: str
    base_url: str


def objects() -> Objects:
    settings = portal().settings
    if settings.live:
        return _cluster_objects()
    try:
        read, _ = read_objects(settings.sources)
    except SourceError as err:
        return Objects((), "", f"the source folders could not be read: {err}")
    kept = tuple(o for o in read if o.get("kind") != "Secret")  # the merge needs no Secret
    return Objects(kept, f"the source folders ({', '.join(settings.sources)})")


# What the merge weighs, cluster-wide: the tenants' objects read as the signed-in user, the
# InferenceProviderConfigs (cluster facts: which name a provider's engine serves) with the
# portal's own client, as the Providers page reads them.
AS_USER = (MODEL_DEPLOYMENTS, EXTERNAL_MODEL_PROVIDERS)


def _cluster_objects() -> Objects:
    user = kubernetes.client.CustomObjectsApi(cluster().as_user(viewer()))
    found: list[Mapping[str, Any]] = []
    try:
        for group, version, plural, kind in AS_USER:
            listed: Any = user.list_cluster_custom_object(
                group, version, plural, _request_timeout=TIMEOUT
            )
            found += [{**item, "kind": kind} for item in listed["items"]]
    except Exception as err:
        failure = api_failure(err)
        if failure is None:
            raise
        why = (
            f"the ModelDeployments and ExternalModelProviders could not be listed as you: {failure}"
        )
        return Objects((), "the cluster", why)
    configs = cluster_configs()
    if configs.problem:
        return Objects(tuple(found), "the cluster, as you", configs.problem)
    return Objects((*found, *configs.objects), "the cluster, as you")


def listed(items: tuple[Mapping[str, Any], ...]) -> list[Listed]:
    out = []
    for obj in items:
        if obj.get("kind") != EXTERNAL_MODEL_PROVIDER:
            continue
        owner = owner_of(obj)
        conditions = dig(obj, "status", "conditions")
        out.append(
            Listed(
                owner.namespace,
                owner.name,
                str(dig(obj, "status", "phase") or "(no status yet)"),
                tuple(
                    {k: str(c.get(k) or "") for k in ("type", "status", "reason", "message")}
                    for c in (conditions if isinstance(conditions, list) else ())
                    if isinstance(c, Mapping)
                ),
                claimed_names(obj),
                requested_by(obj) or "",
                str(dig(obj, "spec", "baseURL") or ""),
            )
        )
    return sorted(out, key=lambda e: (e.namespace, e.name))


@blueprint.get("/gateway")
def page() -> str:
    found = objects()
    return render_template(
        "gateway.html",
        found=found,
        providers=listed(found.items),
        form=Form(),
        live=portal().settings.live,
        username=viewer().username,
    )


def _composed() -> tuple[dict[str, Any] | None, str]:
    """The posted object (from the YAML editor when `source` is yaml, else the form), or None
    and why it could not be read."""
    if request.form.get("source") == "yaml":
        found = yaml_object(request.form.get("yaml", ""))
        return (None, found) if isinstance(found, str) else (found, "")
    form = form_of(request.form, {k: request.form.getlist(k) for k in request.form})
    return form_object(form), ""


def _verdict() -> tuple[Verdict, Objects]:
    obj, problem = _composed()
    found = objects()
    if obj is None:
        return Verdict(None, problem=problem), found
    return verdict(obj, found.items, viewer().username), found


@blueprint.post("/gateway/check")
def check() -> str:
    result, found = _verdict()
    from_form = request.form.get("source") != "yaml"
    return render_template(
        "_gateway_verdict.html", verdict=result, found=found, from_form=from_form
    )


def bundle(form: Mapping[str, str]) -> Bundle:
    """The outputs' Bundle (ui/pages/outputs.py) of the checked object the verdict shows (its
    `yaml` field): checked again here, delivered only when admission allows it and no served
    name is ambiguous."""
    found = yaml_object(form.get("yaml", ""))
    if isinstance(found, str):
        raise OutputError(found)
    return _bundle(verdict(found, objects().items, viewer().username))


def _bundle(result: Verdict) -> Bundle:
    if result.obj is None:
        raise OutputError(result.problem)
    if not result.allowed:
        raise OutputError(
            "not delivered: admission refuses the object or a served name is ambiguous (see the checks)"
        )
    owner = owner_of(result.obj)
    settings = portal().settings
    base = relative_to_root(settings, settings.sources[0]) if settings.sources else ""
    path = "/".join(p for p in (base, "gateway", owner.namespace, f"{owner.name}.yaml") if p)
    title = f"ExternalModelProvider {owner.namespace}/{owner.name}"
    return Bundle(title, (Planned(path, result.text),), (result.obj,))
