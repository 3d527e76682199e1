"""What every request and answer of the portal goes through (docs/ui.md, "Security"):

- a strict Content-Security-Policy (no inline script or style, no eval: htmx runs with
  allowEval off) and the headers that keep the pages out of frames and caches;
- CSRF: a synchronizer token on every state-changing request. The browser holds a random
  session id in an HttpOnly, Secure, SameSite=Strict cookie; the page carries the HMAC of that id
  under the site's key (a form field, and the `X-CSRF-Token` header htmx sends from <body>); a
  POST without the matching token is refused. The request must also come from this origin: its
  `Sec-Fetch-Site` is same-origin (or none: typed by the user), and its `Origin`, when sent, is
  this server's own; a request with neither is refused too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from flask import Flask, Response, abort, g, render_template, request

COOKIE = "runway_ui_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")  # secrets.token_urlsafe(32)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: under no-referrer a form POST (a navigation) says
    # `Origin: null`, and the origin check could not tell it from another site's.
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a state-changing request was refused (403), said to the user as it is."""

    reason: str


def csrf_token(key: bytes, session_id: str) -> str:
    return hmac.new(key, session_id.encode(), hashlib.sha256).hexdigest()


def session_of(cookie: str | None) -> tuple[str, bool]:
    """The browser's session id, and whether it is new (none came, or not one of ours)."""
    if cookie and SESSION_ID.match(cookie):
        return cookie, False
    return secrets.token_urlsafe(32), True


def origin_refusal(
    method: str, host_url: str, origin: str | None, fetch_site: str | None
) -> Refusal | None:
    """None when a request of `method` may change state as far as its origin goes."""
    if method in SAFE_METHODS:
        return None
    if fetch_site is None and origin is None:
        return Refusal("the request says neither its Origin nor its Sec-Fetch-Site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return Refusal(f"the request came from another site (Sec-Fetch-Site: {fetch_site[:32]})")
    if origin is not None and origin.rstrip("/") != host_url.rstrip("/"):
        return Refusal(f"the request came from another origin ({origin[:200]})")
    return None


def token_refusal(method: str, key: bytes, session_id: str, sent: str | None) -> Refusal | None:
    if method in SAFE_METHODS:
        return None
    if not sent:
        return Refusal("the request carries no CSRF token: reload the page")
    if not hmac.compare_digest(sent.encode(), csrf_token(key, session_id).encode()):
        return Refusal("the CSRF token does not match this session: reload the page")
    return None


def install(app: Flask, key: bytes) -> None:
    """The checks before each request and the headers on each answer."""

    @app.before_request
    def check() -> tuple[str, int] | None:
        limit = app.config.get("MAX_CONTENT_LENGTH")
        if limit is not None and (request.content_length or 0) > limit:
            abort(413)  # refused before a byte of the body is read
        session_id, fresh = session_of(request.cookies.get(COOKIE))
        g.session_id, g.fresh_session = session_id, fresh
        g.csrf_token = csrf_token(key, session_id)
        sent = request.headers.get(CSRF_HEADER)
        if sent is None and request.mimetype in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            sent = request.form.get(CSRF_FIELD)
        refusal = origin_refusal(
            request.method,
            request.host_url,
            request.headers.get("Origin"),
            request.headers.get("Sec-Fetch-Site"),
        ) or token_refusal(request.method, key, session_id, None if fresh else sent)
        if refusal is None:
            return None
        return render_template("error.html", code=403, reason=refusal.reason), 403

    @app.after_request
    def headers(answer: Response) -> Response:
        for name, value in HEADERS.items():
            answer.headers.setdefault(name, value)
        answer.headers.setdefault("Cache-Control", "no-store")
        if getattr(g, "fresh_session", False):
            answer.set_cookie(
                COOKIE,
                g.session_id,
                httponly=True,
                secure=True,
                samesite="Strict",
                path="/",
            )
        return answer
