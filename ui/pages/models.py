"""The Models page (issue #41): not built yet; its owner replaces this module."""

from __future__ import annotations

from flask import Blueprint, render_template

from ui.context import NavItem

blueprint = Blueprint("models", __name__)
NAV = NavItem("models.page", "Models", offline=True)


@blueprint.get("/")
@blueprint.get("/models")
def page() -> str:
    return render_template("pending.html", title="Models")
