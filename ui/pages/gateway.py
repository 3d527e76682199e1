"""Page 5, Gateway providers (the portal Providers screen of the gateway design): every
ExternalModelProvider with its phase, conditions, the served names it claims and who requested
it; and a composer (form or YAML) with admission's verdict and the merge-boundary check as
`runway gateway-plan` decides it, delivered through the outputs.

Offline the objects are those of the -f folders; live they are read AS THE SIGNED-IN USER
(every ModelDeployment and ExternalModelProvider the merge must weigh, cluster-wide), so a user
sees only what RBAC lets them see, and the page says when the check could not see everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, render_template, request

from core.admission.configs import requested_by
from core.fields.errors import SourceError
from core.model.kinds import EXTERNAL_MODEL_PROVIDER, dig
from gateway.cluster import list_objects
from gateway.merge import owner_of
from gateway.run import read_objects
from ui.cluster import api_failure
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
from ui.outputs import (
    Bundle,
    OutputError,
    Planned,
    download_text,
    patch_text,
    relative_to_root,
    repo_root,
)

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
        try:
            found = list_objects(cluster().as_user(viewer()))
        except Exception as err:
            failure = api_failure(err)
            if failure is None:
                raise
            why = f"the ModelDeployments and ExternalModelProviders could not be listed as you: {failure}"
            return Objects((), "the cluster", why)
        return Objects(tuple(found), "the cluster, as you")
    try:
        read, _ = read_objects(settings.sources)
    except SourceError as err:
        return Objects((), "", f"the source folders could not be read: {err}")
    kept = tuple(o for o in read if o.get("kind") != "Secret")  # the merge needs no Secret
    return Objects(kept, f"the source folders ({', '.join(settings.sources)})")


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


@blueprint.post("/gateway/download")
def download() -> Response:
    result, _ = _verdict()
    try:
        bundle = _bundle(result)
    except OutputError as err:
        abort(422, description=str(err))
    answer = Response(download_text(bundle), mimetype="application/yaml")
    answer.headers["Content-Disposition"] = 'attachment; filename="external-model-provider.yaml"'
    return answer


@blueprint.post("/gateway/patch")
def patch() -> str:
    result, _ = _verdict()
    text, problem = "", ""
    try:
        bundle = _bundle(result)
        text = patch_text(bundle, repo_root(portal().settings))
    except OutputError as err:
        problem = str(err)
    return render_template("_gateway_patch.html", verdict=result, patch=text, problem=problem)
