"""The Providers page in the browser, offline on examples/ (the shipped configs): every provider
with its capabilities, rules and readiness, and its installation for Flux or Argo CD."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.support.browser import Screenshot, check_accessible, first_contentful_paint
from tests.support.ui import UiServer


def test_the_providers_page_shows_every_shipped_config(
    page: Page, examples_ui: UiServer, screenshot: Screenshot, measure: Any
) -> None:
    page.goto(f"{examples_ui.url}/providers")
    assert page.locator("section.provider h2").all_inner_texts() == [
        "NVIDIA Dynamo (dynamo)",
        "KAITO (kaito)",
        "KubeRay (kuberay)",
        "llm-d (llmd)",
        "Direct vLLM (vllm)",
    ]
    kaito = page.locator("#provider-kaito")
    assert kaito.locator("table.rules tbody tr").all_inner_texts() == [
        "0\t!has(spec.resources) || !has(spec.resources.gpu) || spec.resources.gpu.count == 0\t100\tcompiled",
        "1\tspec.engine.type == 'llamacpp'\t100\tcompiled",
    ]
    expect(kaito.locator(".readiness-part").nth(1)).to_contain_text(
        "Not observed offline: no cluster to look at"
    )
    check_accessible(page)
    screenshot(page, "providers")
    painted = first_contentful_paint(page)
    measure(
        "first-contentful-paint of /providers", "none" if painted is None else f"{painted:.0f} ms"
    )


def test_the_installation_is_shown_for_the_chosen_gitops_engine(
    page: Page, examples_ui: UiServer, screenshot: Screenshot
) -> None:
    page.goto(f"{examples_ui.url}/providers")
    page.locator("#provider-kaito").get_by_role("link").click()
    install = page.locator("#install")
    expect(install.get_by_label("Provider")).to_have_value("kaito")
    expect(install.locator(".object h3")).to_have_text(
        [
            "HelmRepository kaito: strict check passed",
            "HelmRelease kaito-workspace: strict check passed",
        ]
    )
    install.get_by_role("radio", name="Argo CD").check()
    expect(install.locator(".object h3")).to_have_text(
        ["Application kaito-workspace: strict check passed"]
    )
    assert install.locator("pre.helm").inner_text().splitlines() == [
        "helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito",
        "helm repo update kaito",
        "helm upgrade --install kaito-workspace kaito/workspace --version 0.10.0 "
        "--namespace kaito-workspace --create-namespace",
    ]
    expect(install.locator("#outputs-offer p")).to_have_text(
        "Argo CD install of kaito: infrastructure/providers/kaito.yaml"
    )
    install.get_by_role("button", name="Show patch").click()
    expect(install.locator("pre.patch")).to_contain_text(
        "+++ b/infrastructure/providers/kaito.yaml"
    )
    expect(install.locator("pre.patch")).to_contain_text("+kind: Application")
    check_accessible(page)
    install.scroll_into_view_if_needed()
    screenshot(page, "providers-argocd")
