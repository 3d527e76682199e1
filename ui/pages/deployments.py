"""The Deployments page (issue #41): not built yet; its owner replaces this module."""

from __future__ import annotations

from flask import Blueprint, render_template

from ui.context import NavItem

blueprint = Blueprint("deployments", __name__)
NAV = NavItem("deployments.page", "Deployments", offline=False)


@blueprint.get("/deployments")
def page() -> str:
    return render_template("pending.html", title="Deployments")
