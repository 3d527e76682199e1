"""The Providers page (issue #41): not built yet; its owner replaces this module."""

from __future__ import annotations

from flask import Blueprint, render_template

from ui.context import NavItem

blueprint = Blueprint("providers", __name__)
NAV = NavItem("providers.page", "Providers", offline=True)


@blueprint.get("/providers")
def page() -> str:
    return render_template("pending.html", title="Providers")
