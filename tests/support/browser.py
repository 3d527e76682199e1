"""The browser tier's pieces: Debian's Chromium driven by Playwright, page errors, screenshots and the
accessibility check."""

from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, ConsoleMessage, Error, Page

CHROMIUM = Path("/usr/lib/chromium/chromium")  # Debian's binary (/usr/bin/chromium wraps it)


CHROMIUM_ARGS = ("--no-sandbox", "--disable-dev-shm-usage")  # root needs --no-sandbox


VIEWPORT = {"width": 1280, "height": 800}


TIMEOUT_MS = 10_000


@dataclass
class PageErrors:
    """Every console error (CSP violations are logged as such) and uncaught exception of the
    pages watched, in the order seen."""

    pages: list[Page] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        self.pages.append(page)
        page.on("console", self._console)
        page.on("pageerror", self._uncaught)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location
            self.seen.append(
                f"console error at {where['url']}:{where['lineNumber']}: {message.text}"
            )

    def _uncaught(self, error: Error) -> None:
        self.seen.append(f"uncaught {error.name}: {error.message}")

    def take(self) -> list[str]:
        """The errors seen so far (delivered up to now), which the tier then no longer holds
        against the test."""
        self.flush()
        taken, self.seen = self.seen, []
        return taken

    def flush(self) -> None:
        """One round trip to each open page, so the events it sent before are delivered."""
        for page in self.pages:
            if not page.is_closed():
                page.evaluate("0")


@dataclass(frozen=True)
class Screenshot:
    directory: Path

    def __call__(self, page: Page, name: str, *, full_page: bool = True) -> Path:
        """The whole page (or its viewport: Chromium cannot measure a bare SVG document's full
        page) as `<directory>/<name>.png`."""
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", name), name
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{name}.png"
        page.screenshot(path=path, full_page=full_page, animations="disabled", caret="hide")
        return path


def check_accessible(page: Page) -> None:
    """axe-core (the copy inside the axe-playwright-python wheel) run on the page as it is:
    every violation of its default rules (WCAG 2 A and AA, best practices), printed whole."""
    axe = importlib.resources.files("axe_playwright_python").joinpath("axe.min.js").read_text()
    page.evaluate(axe)
    violations = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(
            v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(
                n => ({target: n.target, html: n.html, summary: n.failureSummary}))}))"""
    )
    assert violations == [], json.dumps(violations, indent=2)


def first_contentful_paint(page: Page) -> float | None:
    """The page's first-contentful-paint time in milliseconds (None when it has not painted)."""
    entries: list[dict[str, Any]] = page.evaluate(
        "() => performance.getEntriesByName('first-contentful-paint').map(e => e.toJSON())"
    )
    return float(entries[0]["startTime"]) if entries else None


def new_page(
    browser: Browser, errors: PageErrors, *, headers: dict[str, str] | None = None
) -> Page:
    """A page in a fresh context (no cookies or storage shared), watched by `errors`, sending
    `headers` with every request (a signed-in user's forwarded token, as oauth2-proxy adds
    it); the caller closes `page.context`."""
    context = browser.new_context(
        viewport=VIEWPORT,  # type: ignore[arg-type]
        locale="en-US",
        timezone_id="UTC",
        color_scheme="light",
        reduced_motion="reduce",
        extra_http_headers=headers,
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors.watch(page)
    return page
