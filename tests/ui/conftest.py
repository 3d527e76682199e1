"""The browser tier: Debian's Chromium (`make browser`), driven by Playwright for Python through
`executable_path` (Playwright's own browser download is not reachable here), against the real
`runway ui` on loopback (tests/support/ui.py).

Every test that uses `page` (or more pages from `new_page`, for other users) fails on any
JavaScript error or Content-Security-Policy violation a page logged (`PageErrors`); a test that
provokes one on purpose takes it with `page_errors.take()` and asserts it. `check_accessible(page)` runs axe-core in the page; `screenshot(page, name)` writes
`name.png` to $RUNWAY_SCREENSHOTS (`make screenshots`: docs/images/ui) or to a temporary folder.
Numbers measured in the browser (`measure`) are printed at the end of the run, never asserted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import (
    Browser,
    Page,
    Playwright,
    sync_playwright,
)

from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PageErrors,
    Screenshot,
    new_page,
)
from tests.support.paths import EXAMPLES, ROOT
from tests.support.ui import UiServer

MEASURED = pytest.StashKey[list[str]]()


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
