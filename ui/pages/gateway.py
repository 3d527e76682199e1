"""The Gateway providers page (issue #41): not built yet; its owner replaces this module."""

from __future__ import annotations

from flask import Blueprint, render_template

from ui.context import NavItem

blueprint = Blueprint("gateway", __name__)
NAV = NavItem("gateway.page", "Gateway providers", offline=True)


@blueprint.get("/gateway")
def page() -> str:
    return render_template("pending.html", title="Gateway providers")
