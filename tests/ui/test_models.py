"""The acceptance test of issue #41 in Chromium: from `runway ui --offline -f <a Git copy of
examples/>`, without typing YAML, a new vLLM model on llm-d behind the gateway, to a patch that
`git apply` takes and whose result `runway validate` accepts and `runway render` renders."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page, expect

from tests.support.browser import Screenshot, check_accessible, first_contentful_paint
from tests.support.paths import EXAMPLES
from tests.support.ui import UiServer, runway_program

PRESET = "preset:kaito:qwen/qwen2.5-coder-7b-instruct"
NEW_FILE = "examples/default/qwen2-5-coder-7b-instruct.yaml"
GATEWAY = "gateways/inference"  # the page's default for render --gateway
# Round trips of the page's form changes, measured by htmx's own events in the page: from a
# request's start to its answer swapped into the editor.
ROUND_TRIPS = """() => {
  window.runwayTrips = [];
  const started = new Map();
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    started.set(event.detail.xhr, performance.now());
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    const target = event.detail.target;
    if (target && target.id === "models-editor" && started.has(event.detail.xhr)) {
      window.runwayTrips.push(performance.now() - started.get(event.detail.xhr));
      started.delete(event.detail.xhr);
    }
  });
}"""


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root / "examples")
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "examples"],
    ):
        assert run(argv, root).returncode == 0
    return root


@pytest.fixture
def portal(repo: Path, tmp_path: Path) -> Iterator[UiServer]:
    with UiServer.start(tmp_path / "ui", sources=(repo / "examples",)) as server:
        yield server


def test_a_new_vllm_model_on_llmd_behind_the_gateway_to_a_patch_without_writing_yaml(
    page: Page,
    portal: UiServer,
    repo: Path,
    screenshot: Screenshot,
    measure: Any,
) -> None:
    page.goto(f"{portal.url}/models")
    expect(page.locator("#models-verdict")).to_be_visible()
    painted = first_contentful_paint(page)
    measure("first-contentful-paint of /models", "none" if painted is None else f"{painted:.0f} ms")
    page.select_option("#models-pick", PRESET)
    page.click("#models-start")
    editor = page.locator("#models-yaml")
    expect(editor).to_have_value(re.compile(r"id: qwen/qwen2.5-coder-7b-instruct"))
    page.evaluate(ROUND_TRIPS)

    page.select_option("#models-f-engine", "vllm")
    expect(editor).to_have_value(re.compile(r"\n    type: vllm\n"))
    page.select_option("#models-f-provider", "llmd")
    expect(editor).to_have_value(re.compile(r"\n    name: llmd\n"))
    page.check("#models-f-gateway")
    expect(editor).to_have_value(re.compile(r"\n    enabled: true\n"))

    expect(page.locator("#models-verdict")).to_have_text(
        "default/qwen2-5-coder-7b-instruct: allowed"
    )
    expect(page.locator("#models-render-ok")).to_be_visible()
    kinds = page.locator("#models-files summary strong").all_inner_texts()
    assert {"InferencePool", "HTTPRoute"} <= set(kinds), kinds
    explained = page.locator("#models-explain-text").inner_text()
    assert explained.splitlines()[1:3] == [
        "  engine:    vllm (explicit) set in spec.engine.type",
        "  provider:  llmd (explicit) set in spec.provider.name",
    ]

    offer = page.locator("#outputs-offer")
    expect(offer.locator("p").first).to_have_text(
        f"ModelDeployment default/qwen2-5-coder-7b-instruct: {NEW_FILE}"
    )
    offer.get_by_role("button", name="Show patch").click()
    patch = page.locator("#outputs-result pre.patch")
    expect(patch).to_be_visible()
    text = patch.text_content() or ""
    trips = page.evaluate("() => window.runwayTrips")
    check_accessible(page)
    screenshot(page, "models")
    measure("compose round trips (form change -> editor swapped), ms", _shown(trips))

    assert text.startswith(f"diff --git a/{NEW_FILE} b/{NEW_FILE}\nnew file mode 100644\n")
    (repo.parent / "new.patch").write_text(text)
    assert run(["git", "apply", "--check", "../new.patch"], repo).stderr == ""
    assert run(["git", "apply", "../new.patch"], repo).returncode == 0
    written = yaml.safe_load((repo / NEW_FILE).read_text())
    assert written["spec"] == {
        "model": {"id": "qwen/qwen2.5-coder-7b-instruct"},
        "engine": {"type": "vllm"},
        "provider": {"name": "llmd"},
        "resources": {"gpu": {"count": 1}},
        "gateway": {"enabled": True},
    }
    program = str(runway_program())
    validated = run([program, "validate", NEW_FILE, "--gateway", GATEWAY], repo)
    assert (validated.returncode, validated.stdout) == (
        0,
        "default/qwen2-5-coder-7b-instruct: allowed: engine vllm (explicit), provider llmd "
        "(explicit)\n1 allowed, 0 denied\n",
    )
    rendered = run([program, "render", NEW_FILE, "--repo", "../gitops", "--gateway", GATEWAY], repo)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    with page.expect_download() as downloaded:
        offer.get_by_role("button", name="Download YAML").click()
    assert downloaded.value.suggested_filename == "qwen2-5-coder-7b-instruct.yaml"
    assert (
        Path(downloaded.value.path()).read_text()
        == f"# {NEW_FILE}\n" + (repo / NEW_FILE).read_text()
    )
    folder = repo.parent / "gitops" / "rendered" / "default" / "qwen2-5-coder-7b-instruct"
    # runway.metadata records the render's own command and source commit: the render writes it,
    # the portal's preview (no render has run yet) does not show it
    assert sorted(p.name for p in folder.iterdir() if p.name != "runway.metadata") == sorted(
        Path(k).name for k in page.locator("#models-files summary code").all_inner_texts()
    )


def _shown(trips: list[float]) -> str:
    return ", ".join(f"{t:.0f}" for t in trips) if trips else "none measured"


def test_an_edit_of_the_yaml_fills_the_form_and_errors_are_shown_accessibly(
    page: Page, portal: UiServer
) -> None:
    page.goto(f"{portal.url}/models?pick=source:models/qwen-7b")
    editor = page.locator("#models-yaml")
    text = editor.input_value()
    editor.fill(text.replace("      count: 1\n", "      count: 4\n"))
    editor.press("End")  # a keyup: the editor's trigger
    expect(page.locator("#models-f-gpu_count")).to_have_value("4")
    expect(page.locator("#models-verdict")).to_have_text("models/qwen-7b: allowed")
    editor.fill("kind: ModelDeployment\nspec: [\n")
    editor.press("End")
    expect(page.locator("#models-error")).to_have_text(
        "editor: document 1: not valid YAML at line 3, column 1: did not find expected node content"
    )
    expect(page.locator("#models-f-gpu_count")).to_have_value("4")  # the form stays
    check_accessible(page)
    page.goto(f"{portal.url}/models")  # a new object: denied, its errors by field
    expect(page.locator("#models-errors")).to_be_visible()
    check_accessible(page)
