"""Sign-in in live mode: the OIDC proxy in front (oauth2-proxy, for example) forwards the user's
bearer token; a TokenReview says who it belongs to, and every page then acts as that user.
Offline there is no cluster and nobody signs in."""

from __future__ import annotations

from flask import Flask, g, render_template, request

from kubeio.client import api_failure
from ui.cluster import bearer_token
from ui.context import portal

OPEN = ("/healthz", "/static/")  # answered without a signed-in user


def install(app: Flask) -> None:
    @app.before_request
    def sign_in() -> tuple[str, int] | None:
        found = portal().cluster
        if found is None or request.path.startswith(OPEN):
            return None
        token = bearer_token(request.headers)
        if token is None:
            reason = (
                "no bearer token came with the request: open the portal through its "
                "sign-in proxy, which forwards your token"
            )
            return render_template("error.html", code=401, reason=reason), 401
        try:
            user = found.viewer(token)
        except Exception as err:
            failure = api_failure(err)
            if failure is None:
                raise
            return render_template("error.html", code=503, reason=f"sign-in: {failure}"), 503
        if user is None:
            reason = "the API server does not accept your token (expired, or not for it)"
            return render_template("error.html", code=401, reason=reason), 401
        g.viewer = user
        return None
