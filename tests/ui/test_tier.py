"""The browser tier's own parts, on pages the test writes: what the error collector holds, and
what the accessibility check reports."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page

from tests.ui.conftest import PageErrors, check_accessible

ACCESSIBLE = (
    '<!doctype html><html lang="en"><head><title>t</title></head>'
    "<body><main><h1>Heading</h1><p>Text.</p></main></body></html>"
)


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
