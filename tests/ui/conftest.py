"""The browser tier: Debian's Chromium (`make browser`), driven by Playwright for Python through
`executable_path` (Playwright's own browser download is not reachable here), against the real
`runway ui` on loopback (tests/support/ui.py).

Every test that uses `page` (or more pages from `new_page`, for other users) fails on any
JavaScript error or Content-Security-Policy violation a page logged (`PageErrors`); a test that
provokes one on purpose takes it with `page_errors.take()` and asserts it. `check_accessible(page)` runs axe-core in the page; `screenshot(page, name)` writes
`name.png` to $RUNWAY_SCREENSHOTS (`make screenshots`: docs/images/ui) or to a temporary folder.
Numbers measured in the browser (`measure`) are printed at the end of the run, never asserted."""

from __future__ import annotations

import importlib.resources
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Error,
    Page,
    Playwright,
    sync_playwright,
)

from tests.conftest import EXAMPLES, ROOT
from tests.support.ui import UiServer

CHROMIUM = Path("/usr/lib/chromium/chromium")  # Debian's binary (/usr/bin/chromium wraps it)
CHROMIUM_ARGS = ("--no-sandbox", "--disable-dev-shm-usage")  # root needs --no-sandbox
VIEWPORT = {"width": 1280, "height": 800}
TIMEOUT_MS = 10_000
MEASURED = pytest.StashKey[list[str]]()


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


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"Debian's Chromium is not installed ({CHROMIUM} is missing): run `make browser` "
            "as root (it installs the pinned version with apt-get)",
            pytrace=False,
        )
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
    yield browser
    browser.close()


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


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


@pytest.fixture
def page(browser: Browser, page_errors: PageErrors) -> Iterator[Page]:
    """A page in a fresh context, for one test."""
    page = new_page(browser, page_errors)
    yield page
    page.context.close()


@pytest.fixture(scope="session")
def screenshot(tmp_path_factory: pytest.TempPathFactory) -> Screenshot:
    chosen = os.environ.get("RUNWAY_SCREENSHOTS")
    return Screenshot(Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots"))


@pytest.fixture
def measure(request: pytest.FixtureRequest) -> Any:
    """`measure(what, value)`: printed in the run's summary."""
    lines = request.config.stash.setdefault(MEASURED, [])

    def record(what: str, value: str) -> None:
        print(f"{what}: {value}")
        lines.append(f"{request.node.nodeid}: {what}: {value}")

    return record


@pytest.fixture(scope="session")
def examples_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    """`runway ui --offline -f examples/`, shared by the tier's offline tests."""
    examples = EXAMPLES.relative_to(ROOT)
    with UiServer.start(tmp_path_factory.mktemp("ui"), sources=(examples,)) as server:
        yield server


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test whose page logged an error it did not take fails, with every error listed."""
    result = yield
    errors = getattr(item, "funcargs", {}).get("page_errors")
    if isinstance(errors, PageErrors):
        left = errors.take()
        assert left == [], "the page logged errors:\n" + "\n".join(left)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test's report carries the output of the `runway ui` it used."""
    report = yield
    server = getattr(item, "funcargs", {}).get("examples_ui")
    if report.failed and isinstance(server, UiServer):
        report.sections.append(("runway ui output", server.log_text()))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(MEASURED, [])
    if lines:
        terminalreporter.section("measured in the browser (not asserted)")
        for line in lines:
            terminalreporter.write_line(line)
