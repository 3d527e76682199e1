"""The README's flow diagram (docs/images/flow.svg, `python -m tools.diagram`) opened in the
browser: a well-formed SVG document that displays at its size, with no error, and passes the
accessibility check (its role and name come from its <title>)."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.support.browser import Screenshot, check_accessible
from tools import diagram

READ_BACK = """() => ({
    root: document.documentElement.namespaceURI + ' ' + document.documentElement.localName,
    parseErrors: document.getElementsByTagName('parsererror').length,
    size: [document.documentElement.getBBox().width, document.documentElement.getBBox().height],
    boxes: document.querySelectorAll('rect[rx]').length,
    arrows: document.querySelectorAll('line').length,
    name: document.querySelector('title').textContent,
})"""


def test_the_flow_diagram_displays(page: Page, screenshot: Screenshot) -> None:
    drawn = diagram.parse(diagram.SOURCE.read_text())
    response = page.goto(diagram.OUTPUT.as_uri(), wait_until="load")

    assert response is not None
    assert response.ok
    found = page.evaluate(READ_BACK)
    width = int(page.locator("svg").get_attribute("width") or 0)
    height = int(page.locator("svg").get_attribute("height") or 0)
    assert found == {
        "root": "http://www.w3.org/2000/svg svg",
        "parseErrors": 0,
        "size": [width, height],
        "boxes": len(drawn.boxes),
        "arrows": len(drawn.arrows),
        "name": drawn.title,
    }
    check_accessible(page)
    page.set_viewport_size({"width": width, "height": height})
    screenshot(page, "flow", full_page=False)
