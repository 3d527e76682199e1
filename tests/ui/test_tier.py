"""The browser tier's own parts: the browser is the Chromium `make browser` pins, and, on pages
the test writes, what the error collector holds and what the accessibility check reports."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from playwright.sync_api import Browser, Page, Route

from tests.support.browser import PageErrors, check_accessible, new_page
from tests.support.paths import ROOT

ACCESSIBLE = (
    '<!doctype html><html lang="en"><head><title>t</title></head>'
    "<body><main><h1>Heading</h1><p>Text.</p></main></body></html>"
)


def test_the_browser_is_the_debian_chromium_the_makefile_pins(browser: Browser) -> None:
    found = re.search(r"^CHROMIUM_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found is not None
    pinned = found[1]
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "chromium"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (installed, browser.version) == (pinned, pinned.split("-")[0])


def test_the_collector_holds_each_console_error_and_uncaught_exception(
    page: Page, page_errors: PageErrors
) -> None:
    page.set_content(
        ACCESSIBLE.replace(
            "</body>",
            "<script>console.error('logged by the test');"
            " console.warn('a warning is not an error');"
            " throw new RangeError('thrown by the test');</script></body>",
        )
    )
    assert page_errors.take() == [
        "console error at :0: logged by the test",
        "uncaught RangeError: thrown by the test",
    ]
    check_accessible(page)


def test_the_accessibility_check_lists_every_violation(page: Page) -> None:
    page.set_content('<!doctype html><html><body><img src="data:,"></body></html>')
    with pytest.raises(AssertionError) as failed:
        check_accessible(page)
    listed = json.loads(str(failed.value).split("\nassert ", 1)[0])
    assert [(v["id"], v["impact"], [n["target"] for n in v["nodes"]]) for v in listed] == [
        ("document-title", "serious", [["html"]]),
        ("html-has-lang", "serious", [["html"]]),
        ("image-alt", "critical", [["img"]]),
        ("landmark-one-main", "moderate", [["html"]]),
        ("page-has-heading-one", "moderate", [["html"]]),
        ("region", "moderate", [["img"]]),
    ]


def test_another_page_sends_its_headers_and_is_watched_too(
    browser: Browser, page: Page, page_errors: PageErrors
) -> None:
    other = new_page(browser, page_errors, headers={"X-Forwarded-Access-Token": "a-token"})
    sent: list[str | None] = []

    def answer(route: Route) -> None:
        sent.append(route.request.headers.get("x-forwarded-access-token"))
        html = ACCESSIBLE.replace(
            "</body>", "<script>console.error('from the other');</script></body>"
        )
        route.fulfill(status=200, content_type="text/html", body=html)

    try:
        other.route("http://portal.test/", answer)
        other.goto("http://portal.test/")
        page.set_content(ACCESSIBLE)
        assert (sent, page_errors.take()) == (
            ["a-token"],
            ["console error at http://portal.test/:0: from the other"],
        )
    finally:
        other.context.close()
