"""Page 4, Providers: each InferenceProviderConfig with its capabilities per engine, its selection
rules compiled or refused, its readiness (the config's own status and the upstream operator's,
apart), and its installation as GitOps objects (Flux or Argo CD) with the equivalent `helm`
commands, delivered through the outputs.

Offline the configs are those of the -f folders, else the shipped ones; live they are the
cluster's, listed with the portal's own client (configs are cluster-scoped facts, not a tenant's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, abort, render_template, request

from core.model.kinds import InferenceProviderConfig
from core.rendering.installs import Flavour
from kubeio.registry import build_registry
from ui.context import NavItem, cluster, portal
from ui.outputs import OutputError, download_text, patch_text, repo_root
from ui.providers_configs import configs
from ui.providers_health import OperatorStatus, operator_statuses
from ui.providers_install import ENGINE_TITLES, install_bundle, install_view
from ui.providers_view import ProviderView, provider_views

blueprint = Blueprint("providers", __name__)
NAV = NavItem("providers.page", "Providers", offline=True)


def _engine() -> Flavour:
    raw = request.values.get("engine", Flavour.FLUX.value)
    try:
        return Flavour(raw)
    except ValueError:
        abort(400, description=f"engine must be one of {', '.join(e.value for e in Flavour)}")


def _config(name: str) -> Mapping[str, Any]:
    found = configs()
    for obj in found.objects:
        if InferenceProviderConfig(obj).name == name:
            return obj
    abort(404, description=f"no InferenceProviderConfig {name!r} in {found.origin or 'view'}")


@blueprint.get("/providers")
def page() -> str:
    found = configs()
    views: list[ProviderView] = (
        provider_views(found.objects, build_registry(found.objects)) if found.objects else []
    )
    operators: dict[str, OperatorStatus] | None = None
    if portal().settings.live and found.objects:
        operators = operator_statuses(cluster().own(), found.objects)
    settings = portal().settings
    installs = {
        v.name: install_view(v.obj, v.name, Flavour.FLUX, settings.install_path) for v in views
    }
    return render_template(
        "providers.html",
        found=found,
        views=views,
        operators=operators,
        installs=installs,
        engines=ENGINE_TITLES,
    )


@blueprint.get("/providers/<name>/install")
def install(name: str) -> str:
    view = install_view(_config(name), name, _engine(), portal().settings.install_path)
    return render_template("_providers_install.html", install=view, engines=ENGINE_TITLES)


@blueprint.post("/providers/<name>/install/download")
def download(name: str) -> Response:
    view = install_view(_config(name), name, _engine(), portal().settings.install_path)
    if not view.objects:
        abort(422, description=f"{name} has nothing to install")
    answer = Response(download_text(install_bundle(view)), mimetype="application/yaml")
    filename = f"{name}-{view.engine.value}.yaml"
    answer.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return answer


@blueprint.post("/providers/<name>/install/patch")
def patch(name: str) -> str:
    view = install_view(_config(name), name, _engine(), portal().settings.install_path)
    text, problem = "", ""
    if not view.objects:
        problem = f"{name} has nothing to install"
    else:
        try:
            text = patch_text(install_bundle(view), repo_root(portal().settings))
        except OutputError as err:
            problem = str(err)
    return render_template("_providers_patch.html", install=view, patch=text, problem=problem)
