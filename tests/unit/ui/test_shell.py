"""The portal's shell: security headers, the CSRF synchronizer token and origin checks on every
state-changing request, error pages without tracebacks, the vendored htmx file, `runway ui`'s
settings."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import pytest
from flask import Blueprint, Flask
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.ui import settings_of
from tests.support.paths import EXAMPLES, ROOT
from ui import security
from ui.app import create_app
from ui.settings import Mode, UiSettings
from webhook.settings import SettingsError

KEY = b"k" * 32
# htmx 2.0.11 (npm htmx.org, dist/htmx.min.js): the one vendored file. Replacing it is a
# decision: change this digest with the version in docs/ui.md.
HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"


def offline_app() -> Flask:
    app = create_app(UiSettings(mode=Mode.OFFLINE, sources=(str(EXAMPLES),), secret_key=KEY))
    echo = Blueprint("echo", __name__)

    @echo.post("/test-echo")
    def post() -> str:
        return "changed"

    app.register_blueprint(echo)
    return app


def session(client: object) -> tuple[str, str]:
    """A fresh session: the cookie the portal set, and the token its pages carry."""
    answer = client.get("/about")  # type: ignore[attr-defined]
    cookie = answer.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    return cookie, security.csrf_token(KEY, cookie)


def test_htmx_is_the_pinned_file() -> None:
    data = (ROOT / "ui" / "static" / "htmx.min.js").read_bytes()
    assert hashlib.sha256(data).hexdigest() == HTMX_SHA256


def test_every_answer_carries_the_security_headers_and_a_strict_cookie() -> None:
    answer = offline_app().test_client().get("/about")
    assert answer.status_code == 200
    assert {k: answer.headers[k] for k in security.HEADERS} == security.HEADERS
    assert "'unsafe-inline'" not in security.CSP and "'unsafe-eval'" not in security.CSP
    cookie = answer.headers["Set-Cookie"]
    parts = cookie.split("; ")
    assert parts[0].startswith(f"{security.COOKIE}=")
    assert sorted(parts[1:]) == ["HttpOnly", "Path=/", "SameSite=Strict", "Secure"]


def test_the_page_carries_the_token_of_its_session() -> None:
    client = offline_app().test_client()
    _, token = session(client)
    page = client.get("/about").get_data(as_text=True)
    assert f'hx-headers=\'{{"X-CSRF-Token": "{token}"}}\'' in page
    assert "<script>" not in page and " style=" not in page  # nothing inline for the CSP to block


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Sec-Fetch-Site": "same-origin"}, (200, "changed")),
        ({"Origin": "http://localhost"}, (200, "changed")),
        (
            {"Sec-Fetch-Site": "cross-site"},
            (403, "the request came from another site (Sec-Fetch-Site: cross-site)"),
        ),
        (
            {"Origin": "https://evil.example"},
            (403, "the request came from another origin (https://evil.example)"),
        ),
        ({}, (403, "the request says neither its Origin nor its Sec-Fetch-Site")),
    ],
)
def test_a_post_must_come_from_this_origin(
    headers: dict[str, str], expected: tuple[int, str]
) -> None:
    client = offline_app().test_client()
    _, token = session(client)
    answer = client.post("/test-echo", headers={**headers, security.CSRF_HEADER: token})
    assert (answer.status_code, _said(answer.get_data(as_text=True))) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (None, "the request carries no CSRF token: reload the page"),
        ("0" * 64, "the CSRF token does not match this session: reload the page"),
    ],
)
def test_a_post_without_the_sessions_token_is_refused(token: str | None, expected: str) -> None:
    client = offline_app().test_client()
    session(client)
    headers = {"Sec-Fetch-Site": "same-origin"} | ({security.CSRF_HEADER: token} if token else {})
    answer = client.post("/test-echo", headers=headers)
    assert (answer.status_code, _said(answer.get_data(as_text=True))) == (403, expected)


def test_the_form_field_carries_the_token_too() -> None:
    client = offline_app().test_client()
    _, token = session(client)
    answer = client.post(
        "/test-echo", data={"csrf_token": token}, headers={"Origin": "http://localhost"}
    )
    assert (answer.status_code, answer.get_data(as_text=True)) == (200, "changed")


def test_another_sessions_token_is_refused() -> None:
    app = offline_app()
    _, theirs = session(app.test_client())
    mine = app.test_client()
    session(mine)
    answer = mine.post(
        "/test-echo", headers={"Sec-Fetch-Site": "same-origin", security.CSRF_HEADER: theirs}
    )
    assert answer.status_code == 403


@settings(max_examples=60, deadline=None)
@given(
    cookie=st.text(max_size=80),
    sent=st.text(max_size=80),
    origin=st.one_of(st.none(), st.text(max_size=40)),
    site=st.one_of(
        st.none(), st.sampled_from(["same-origin", "same-site", "cross-site", "none", "x"])
    ),
)
def test_a_forged_post_never_changes_anything(
    cookie: str, sent: str, origin: str | None, site: str | None
) -> None:
    """Whatever a hostile page sends, a POST without this session's token is refused, and the
    answer is a page, never a 500."""
    client = offline_app().test_client()
    if cookie.isascii() and cookie.isprintable() and ";" not in cookie:
        client.set_cookie(security.COOKIE, cookie)
    headers = {
        k: v
        for k, v in {"Origin": origin, "Sec-Fetch-Site": site}.items()
        if v is not None and v.isascii() and v.isprintable()
    }
    origin, site = headers.get("Origin"), headers.get("Sec-Fetch-Site")
    if sent.isascii() and sent.isprintable():
        headers[security.CSRF_HEADER] = sent
    answer = client.post("/test-echo", headers=headers)
    legit = sent == security.csrf_token(KEY, cookie) and security.SESSION_ID.match(cookie)
    assert answer.status_code == (
        200
        if legit
        and site in (None, "same-origin", "none")
        and origin in (None, "http://localhost")
        and (origin or site)
        else 403
    )


def test_errors_are_pages_without_tracebacks() -> None:
    app = offline_app()
    boom = Blueprint("boom", __name__)

    @boom.get("/test-boom")
    def fail() -> str:
        raise RuntimeError("secret detail")

    app.register_blueprint(boom)
    client = app.test_client()
    _, token = session(client)
    missing = client.get("/nowhere")
    failed = client.get("/test-boom")
    too_big = client.post(
        "/test-echo",
        data=b"x" * (1024 * 1024 + 1),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Sec-Fetch-Site": "same-origin",
            security.CSRF_HEADER: token,
        },
    )
    assert (missing.status_code, failed.status_code, too_big.status_code) == (404, 500, 413)
    assert (
        _said(failed.get_data(as_text=True))
        == "the portal failed (RuntimeError); its log has the details"
    )
    assert "secret detail" not in failed.get_data(as_text=True)
    assert "Traceback" not in missing.get_data(as_text=True) + failed.get_data(as_text=True)


def test_health_and_the_about_page_offline() -> None:
    client = offline_app().test_client()
    assert client.get("/healthz").get_data(as_text=True) == "ok"
    page = client.get("/about").get_data(as_text=True)
    assert "<p>Offline: no cluster. Pages read the source folder only.</p>" in page
    assert '<tr><th scope="row">Mode</th><td>offline</td></tr>' in page


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "offline": False,
        "sources": [],
        "in_cluster": False,
        "kubeconfig": None,
        "context": None,
        "actions": False,
        "apply_as_user": False,
        "repo": "",
        "remote": "origin",
        "secret_key_file": None,
        "install_path": "infrastructure/providers",
        "host": "127.0.0.1",
        "port": 8080,
        "workers": 1,
        "threads": 8,
    }
    return argparse.Namespace(**(base | given))


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"offline": True}, "-f: --offline needs a source folder to read"),
        (
            {"offline": True, "sources": ["examples"], "kubeconfig": "k"},
            "--offline: names no cluster: drop --in-cluster, --kubeconfig and --context",
        ),
        ({"apply_as_user": True}, "--apply-as-user: needs --actions (the site enables actions)"),
        ({"port": 70000}, "--port: 70000 is not a port"),
        ({"sources": ["/nonexistent-folder"]}, "-f: /nonexistent-folder is not a folder"),
    ],
)
def test_settings_that_cannot_be_used_are_named(given: dict[str, object], expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_of(_args(**given))
    assert str(caught.value) == expected


def test_a_short_secret_key_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"short")
    with pytest.raises(SettingsError) as caught:
        settings_of(_args(secret_key_file=str(key)))
    assert str(caught.value) == "--secret-key-file: holds 5 bytes; at least 32 are needed"


def _said(page: str) -> str:
    """The reason an error page states (its role=alert paragraph)."""
    start = page.find('role="alert">')
    return page[start + len('role="alert">') : page.find("</p>", start)] if start >= 0 else page
