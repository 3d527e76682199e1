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

from flask import Blueprint, render_template, request

from core.model.kinds import InferenceProviderConfig
from core.rendering.installs import Flavour
from kubeio.registry import build_registry
from ui.context import NavItem, cluster, portal
from ui.outputs import Bundle, OutputError
from ui.providers_configs import configs
from ui.providers_health import OperatorStatus, operator_statuses
from ui.providers_install import ENGINE_TITLES, InstallView, install_bundle, install_view
from ui.providers_view import ProviderView, provider_views

blueprint = Blueprint("providers", __name__)
NAV = NavItem("providers.page", "Providers", offline=True)


FLAVOUR = "flavour"  # the install form's fields
PROVIDER = "provider"


def _flavour(raw: str) -> Flavour:
    try:
        return Flavour(raw or Flavour.FLUX.value)
    except ValueError:
        choices = ", ".join(e.value for e in Flavour)
        raise OutputError(f"{FLAVOUR} must be one of {choices}, not {raw[:40]!r}") from None


def _config(name: str) -> Mapping[str, Any]:
    found = configs()
    for obj in found.objects:
        if InferenceProviderConfig(obj).name == name:
            return obj
    where = found.origin or "view"
    raise OutputError(f"{PROVIDER}: no InferenceProviderConfig {name[:80]!r} in {where}")


def chosen(form: Mapping[str, str]) -> InstallView:
    """The installation the install form chose: its provider's config as its flavour's objects."""
    config = _config(form.get(PROVIDER, ""))
    flavour = _flavour(form.get(FLAVOUR, ""))
    name = InferenceProviderConfig(config).name
    return install_view(config, name, flavour, portal().settings.install_path)


def bundle(form: Mapping[str, str]) -> Bundle:
    """The outputs' Bundle of the install form (ui/pages/outputs.py): the chosen provider's
    install objects as `<--install-path>/<provider>.yaml`, and the objects to apply."""
    view = chosen(form)
    if view.errors:
        raise OutputError(
            f"the installation of {view.provider} cannot be written as "
            f"{ENGINE_TITLES[view.engine]} objects (shown above)"
        )
    if not view.objects:
        raise OutputError(view.absent or f"{view.provider} has nothing to install")
    if not view.passes:
        raise OutputError(f"the install objects of {view.provider} fail the strict check")
    return install_bundle(view)


@blueprint.get("/providers")
def page() -> str:
    found = configs()
    views: list[ProviderView] = (
        provider_views(found.objects, build_registry(found.objects)) if found.objects else []
    )
    operators: dict[str, OperatorStatus] | None = None
    if portal().settings.live and found.objects:
        operators = operator_statuses(cluster().own(), found.objects)
    install: InstallView | None = None
    problem = ""
    if views:
        asked = {PROVIDER: views[0].name, FLAVOUR: Flavour.FLUX.value, **request.args.to_dict()}
        try:
            install = chosen(asked)
        except OutputError as err:
            problem = str(err)
    return render_template(
        "providers.html",
        found=found,
        views=views,
        operators=operators,
        install=install,
        install_problem=problem,
        engines=ENGINE_TITLES,
    )


@blueprint.get("/providers/install")
def install() -> tuple[str, int] | str:
    """The install form's view of the chosen provider and flavour (objects, `helm` commands)."""
    try:
        view = chosen(request.args)
    except OutputError as err:
        return render_template("_providers_install_view.html", problem=str(err)), 200
    return render_template("_providers_install_view.html", install=view, engines=ENGINE_TITLES)
