"""`runway ui`'s Flask app: one Blueprint per page (ui/pages/), the security layer on every
request (ui/security.py), sign-in in live mode (ui/signin.py), and error pages that say what
went wrong without a traceback."""

from __future__ import annotations

import importlib
import logging
import secrets
from pathlib import Path

from flask import Flask, Response, render_template
from werkzeug.exceptions import HTTPException

from kubeio.client import api_client
from ui import security, signin
from ui.cluster import Cluster
from ui.context import EXTENSION, NavItem, Portal
from ui.settings import UiSettings

HERE = Path(__file__).resolve().parent
MAX_BODY = 1024 * 1024  # bytes of one request: a composed object is a few KiB
# The pages in the order of the navigation; each module has `blueprint` and `NAV`.
PAGES = (
    "ui.pages.models",
    "ui.pages.deployments",
    "ui.pages.providers",
    "ui.pages.gateway",
    "ui.pages.about",
    "ui.pages.outputs",  # no page of its own: the output buttons' endpoints (NAV is None)
)
LOG = logging.getLogger("runway.ui")


def cluster_for(settings: UiSettings) -> Cluster | None:
    if not settings.live:
        return None
    return Cluster(
        lambda: api_client(
            settings.kubeconfig, in_cluster=settings.in_cluster, context=settings.context
        )
    )


def create_app(settings: UiSettings, *, cluster: Cluster | None = None) -> Flask:
    app = Flask(
        "ui",
        root_path=str(HERE),
        template_folder="templates",
        static_folder="static",
        static_url_path="/static",
    )
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.config["SEND_FILE_MAX_AGE_DEFAULT"] = 300
    app.jinja_env.autoescape = True
    app.extensions[EXTENSION] = Portal(settings, cluster or cluster_for(settings))
    nav: list[NavItem] = []
    for name in PAGES:
        module = importlib.import_module(name)
        app.register_blueprint(module.blueprint)
        if module.NAV is not None:
            nav.append(module.NAV)
    app.jinja_env.globals["NAV"] = tuple(nav)
    app.jinja_env.globals["SETTINGS"] = settings
    security.install(app, settings.secret_key or secrets.token_bytes(32))
    signin.install(app)
    _errors(app)

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok", mimetype="text/plain")

    return app


def _errors(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> tuple[str, int]:
        code = err.code or 500
        return render_template("error.html", code=code, reason=err.description or ""), code

    @app.errorhandler(Exception)
    def unexpected(err: Exception) -> tuple[str, int]:
        LOG.exception("a page failed")  # the traceback goes to the log, never to the page
        reason = f"the portal failed ({type(err).__name__}); its log has the details"
        return render_template("error.html", code=500, reason=reason), 500
