"""The shell every page shares, in a real browser: the About page of `runway ui --offline -f
examples/` loads without an error, passes the accessibility check, is sent with the strict
Content-Security-Policy, and that policy blocks a script injected inline."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from playwright.sync_api import Page

from tests.support.browser import (
    PageErrors,
    Screenshot,
    check_accessible,
    first_contentful_paint,
)
from tests.support.ui import UiServer

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'"
)

INLINE_CODE = "window.injectedRan = true;"
# Adds a <script> element whose code (the argument) is inline and reports what followed: whether the code ran
# and the securitypolicyviolation event the document received (null when none came in 2 s).
INJECT_INLINE_SCRIPT = """code => new Promise(resolve => {
    const timer = setTimeout(() => resolve({ran: window.injectedRan === true, violation: null}), 2000);
    document.addEventListener('securitypolicyviolation', event => {
        clearTimeout(timer);
        resolve({
            ran: window.injectedRan === true,
            violation: {
                effectiveDirective: event.effectiveDirective,
                blockedURI: event.blockedURI,
                disposition: event.disposition,
                originalPolicy: event.originalPolicy,
            },
        });
    }, {once: true});
    const script = document.createElement('script');
    script.textContent = code;
    document.head.appendChild(script);
})"""


def test_the_about_page_loads_accessible_with_no_error(
    page: Page, examples_ui: UiServer, screenshot: Screenshot, measure: Any
) -> None:
    response = page.goto(f"{examples_ui.url}/about", wait_until="load")
    assert response is not None
    assert response.status == 200
    assert response.headers["content-security-policy"] == CSP
    assert page.title() == "About · Runway"
    check_accessible(page)
    screenshot(page, "about")
    paints = [first_contentful_paint(page)]
    page.reload(wait_until="load")
    paints.append(first_contentful_paint(page))
    for load, paint in zip(("first", "second"), paints, strict=True):
        shown = "none" if paint is None else f"{paint:.0f} ms"
        measure(f"first-contentful-paint of /about, {load} load", shown)


def test_the_policy_blocks_an_inline_script(
    page: Page, examples_ui: UiServer, page_errors: PageErrors
) -> None:
    page.goto(f"{examples_ui.url}/about", wait_until="load")
    outcome = page.evaluate(INJECT_INLINE_SCRIPT, INLINE_CODE)
    assert outcome == {
        "ran": False,
        "violation": {
            "effectiveDirective": "script-src-elem",
            "blockedURI": "inline",
            "disposition": "enforce",
            "originalPolicy": CSP,
        },
    }
    assert page.evaluate("() => window.injectedRan === undefined") is True
    # Chromium logs the violation as a console error, at the line that added the element.
    line = INJECT_INLINE_SCRIPT.splitlines().index("    document.head.appendChild(script);")
    digest = base64.b64encode(hashlib.sha256(INLINE_CODE.encode()).digest()).decode()
    assert page_errors.take() == [
        f"console error at :{line}: Executing inline script violates the following Content "
        "Security Policy directive 'script-src 'self''. Either the 'unsafe-inline' keyword, a "
        f"hash ('sha256-{digest}'), or a nonce ('nonce-...') is required to enable inline "
        "execution. The action has been blocked."
    ]
