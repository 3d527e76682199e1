"""The Gateway providers page in the browser, offline on examples/: the list, composing an
ExternalModelProvider with the form, and the refusal of served names other objects already
claim, naming both claimants as `runway gateway-plan` prints it."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.browser import Screenshot, check_accessible, first_contentful_paint
from tests.support.ui import UiServer


def compose(page: Page, *, name: str, served: list[str]) -> None:
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Namespace").fill("team-a")
    page.get_by_label("Base URL (OpenAI-compatible API root)").fill("https://api.example.com/v1")
    page.get_by_label("Secret name").fill("example-key")
    for i, value in enumerate(served, 1):
        page.get_by_label(f"Served name {i}", exact=True).fill(value)
    page.get_by_role("button", name="Check", exact=True).click()


def test_the_gateway_page_lists_the_providers(
    page: Page, examples_ui: UiServer, screenshot: Screenshot, measure: Any
) -> None:
    page.goto(f"{examples_ui.url}/gateway")
    rows = page.locator("table.emps tbody tr")
    expect(rows).to_have_count(1)
    assert rows.first.locator("td").all_inner_texts() == [
        "gateway",
        "openai",
        "(no status yet)",
        "gpt-4o, gpt-4o-mini, llama-3.1-8b",
        "alice@example.com",
        "https://api.openai.com/v1",
        "none",
    ]
    check_accessible(page)
    screenshot(page, "gateway")
    painted = first_contentful_paint(page)
    measure(
        "first-contentful-paint of /gateway", "none" if painted is None else f"{painted:.0f} ms"
    )


def test_an_ambiguous_served_name_is_refused_naming_both_claimants(
    page: Page, examples_ui: UiServer, screenshot: Screenshot, measure: Any
) -> None:
    page.goto(f"{examples_ui.url}/gateway")
    started = time.monotonic()
    compose(page, name="other", served=["gpt-4o", "microsoft/Phi-4-mini-instruct", "fresh"])
    plan = page.locator("#gateway-verdict pre.plan")
    expect(plan).to_contain_text("CONFLICT")
    measure("compose and check round trip (s)", f"{time.monotonic() - started:.2f}")
    assert plan.inner_text().splitlines() == [
        "model     fresh  ExternalModelProvider/team-a/other  -> https://api.example.com/v1",
        "CONFLICT  gpt-4o  claimed by ExternalModelProvider/gateway/openai, "
        "ExternalModelProvider/team-a/other; none is registered",
        "CONFLICT  microsoft/Phi-4-mini-instruct  claimed by ExternalModelProvider/team-a/other, "
        "ModelDeployment/models/phi-direct; none is registered",
    ]
    expect(page.get_by_role("alert").filter(has_text="Refused")).to_have_text(
        "Refused an ambiguous served name registers no claimant:"
    )
    expect(page.locator("#gateway-yaml")).to_have_value(
        page.locator("#gateway-verdict pre.object").inner_text()
    )
    expect(page.get_by_role("button", name="Show patch")).to_have_count(0)
    check_accessible(page)
    screenshot(page, "gateway-conflict")


def test_a_provider_with_its_own_names_is_allowed_and_patched(
    page: Page, examples_ui: UiServer
) -> None:
    page.goto(f"{examples_ui.url}/gateway")
    compose(page, name="fresh", served=["fresh-model"])
    expect(page.locator("#gateway-verdict .badge").first).to_have_text("Allowed")
    offer = page.locator("#outputs-offer")
    expect(offer.locator("p").first).to_have_text(
        "ExternalModelProvider team-a/fresh: examples/gateway/team-a/fresh.yaml"
    )
    offer.get_by_role("button", name="Show patch").click()
    patch = page.locator("#outputs-result pre.patch")
    expect(patch).to_contain_text("diff --git")
    assert patch.inner_text().splitlines()[:5] == [
        "diff --git a/examples/gateway/team-a/fresh.yaml b/examples/gateway/team-a/fresh.yaml",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/examples/gateway/team-a/fresh.yaml",
        "@@ -0,0 +1,12 @@",
    ]
    check_accessible(page)
