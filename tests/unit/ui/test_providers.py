"""The Providers page (ui/pages/providers.py) through Flask's test client, offline, and the
operator readiness (ui/providers_health.py) over observed clusters: capabilities, rules compiled
or refused with the reason, the config's own status apart from its upstream operator's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask, render_template

from core.status.providers import Observed
from kubeio.registry import build_registry
from kubeio.sources import parse_documents, read_documents
from ui.app import create_app
from ui.providers_health import Check, OperatorStatus, operator_status, spec_of
from ui.providers_view import provider_views
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
HEALTH = (
    '{"crds": [{"name": "workspaces.kaito.sh", "version": "v1beta1"}], "operatorPods": '
    '[{"namespace": "alpha-system", "selectors": ["app=alpha"]}]}'
)
CONFIGS = f"""\
apiVersion: airunway.ai/v1alpha1
kind: InferenceProviderConfig
metadata:
  name: alpha
  annotations:
    airunway.ai/display-name: Alpha
    airunway.ai/health: '{HEALTH}'
spec:
  capabilities:
    engines:
      - name: vllm
        servingModes: [aggregated]
        apiFormats: [openai-chat]
        gpuSupport: true
        cpuSupport: false
  selectionRules:
    - condition: "spec.engine.type == 'vllm'"
      priority: 10
    - condition: "spec.engine.type == "
      priority: 5
status:
  ready: true
  version: v0.1.0
  lastHeartbeat: "2026-12-07T07:00:00Z"
  conditions:
    - type: UpstreamReady
      status: "True"
      reason: UpstreamReady
      message: every CRD and operator pod it needs is there
      lastTransitionTime: "2026-12-07T06:00:00Z"
---
apiVersion: airunway.ai/v1alpha1
kind: InferenceProviderConfig
metadata:
  name: beta
spec:
  capabilities:
    engines: "not a list"
  selectionRules:
    - condition: "true"
"""


def lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip())


def part(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.S)
    assert found is not None, pattern
    return lines(found.group(0))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "configs.yaml").write_text(CONFIGS)
    return tmp_path


def app_of(*sources: Path) -> Flask:
    return create_app(
        UiSettings(mode=Mode.OFFLINE, sources=tuple(map(str, sources)), secret_key=KEY)
    )


def test_rules_are_marked_compiled_or_refused_with_the_reason(folder: Path) -> None:
    page = app_of(folder).test_client().get("/providers").get_data(as_text=True)
    alpha = part(page, r'<section class="panel provider" id="provider-alpha".*?</section>')
    beta = part(page, r'<section class="panel provider" id="provider-beta".*?</section>')
    assert part(alpha, r'<table class="rules">.*?</table>') == lines(
        """\
<table class="rules">
  <caption>Selection rules</caption>
  <thead><tr><th scope="col">#</th><th scope="col">Condition (CEL)</th><th scope="col">Priority</th><th scope="col">Compiled</th></tr></thead>
  <tbody>
  <tr><td>0</td><td><code>spec.engine.type == &#39;vllm&#39;</code></td><td>10</td><td><span class="ok">compiled</span></td></tr>
  <tr><td>1</td><td><code>spec.engine.type == </code></td><td>5</td><td><span class="bad">refused: line 1, column 21: Syntax error: mismatched input &#39;&lt;EOF&gt;&#39;</span></td></tr>
  </tbody>
</table>"""
    )
    assert part(beta, r'<table class="rules">.*?</table>') == lines(
        """\
<table class="rules">
  <caption>Selection rules</caption>
  <thead><tr><th scope="col">#</th><th scope="col">Condition (CEL)</th><th scope="col">Priority</th><th scope="col">Compiled</th></tr></thead>
  <tbody>
  <tr><td>0</td><td><code>true</code></td><td>0</td><td><span class="bad">refused: InferenceProviderConfig beta skipped: spec.capabilities.engines: Invalid value: must be array, not string</span></td></tr>
  </tbody>
</table>"""
    )
    assert part(alpha, r'<table class="engines">.*?</table>') == lines(
        """\
<table class="engines">
  <caption>Capabilities per engine</caption>
  <thead><tr><th scope="col">Engine</th><th scope="col">Serving modes</th><th scope="col">API formats</th><th scope="col">GPU</th><th scope="col">CPU</th></tr></thead>
  <tbody>
  <tr><td>vllm</td><td>aggregated</td><td>openai-chat</td><td>yes</td><td>no</td></tr>
  </tbody>
</table>"""
    )


def test_offline_the_config_is_shown_and_the_operator_is_not_observed(folder: Path) -> None:
    page = app_of(folder).test_client().get("/providers").get_data(as_text=True)
    beta = part(page, r'<section class="panel provider" id="provider-beta".*?</section>')
    assert part(beta, r'<div class="readiness".*?(?=<table class="engines">)') == lines(
        """\
<div class="readiness" role="group" aria-label="Readiness of beta">
  <div class="readiness-part">
    <h3>Config</h3>
    <p class="ok"><span class="badge">Ready</span> no status written: without one, a config takes part in selection</p>
    <p class="bad">Admission refuses this config:</p>
    <ul class="errors"><li><code>spec.capabilities.engines</code>: Invalid value: must be array, not string</li></ul>
    <p class="bad">Not used for selection: InferenceProviderConfig beta skipped: spec.capabilities.engines: Invalid value: must be array, not string</p>
  </div>
  <div class="readiness-part">
    <h3>Upstream operator</h3>
    <p class="muted"><span class="badge">Not observed</span> offline: no cluster to look at</p>
  </div>
</div>"""
    )


def test_without_configs_in_the_folders_the_shipped_ones_are_shown(tmp_path: Path) -> None:
    page = app_of(tmp_path).test_client().get("/providers").get_data(as_text=True)
    assert re.findall(r'<h2 id="provider-[a-z]+-title">([^<]+)<span', page) == [
        "NVIDIA Dynamo ",
        "KAITO ",
        "KubeRay ",
        "llm-d ",
        "Direct vLLM ",
    ]
    assert "InferenceProviderConfigs from the configs Runway ships." in page


def test_unknown_provider_and_flavour_are_named(folder: Path) -> None:
    client = app_of(folder).test_client()
    missing = client.get("/providers/install?provider=nope&flavour=flux")
    flavour = client.get("/providers/install?provider=alpha&flavour=helm")
    assert [a.get_data(as_text=True).strip() for a in (missing, flavour)] == [
        '<p class="bad" role="alert">provider: no InferenceProviderConfig &#39;nope&#39; in the '
        f"source folders ({folder})</p>",
        '<p class="bad" role="alert">flavour must be one of flux, argocd, not &#39;helm&#39;</p>',
    ]


def observed(*, crd: bool, pods: int) -> Observed:
    crds = {"workspaces.kaito.sh": ("v1beta1",)} if crd else {}
    return Observed(crds, {("alpha-system", "app=alpha"): pods})


def test_the_operator_verdict_is_the_status_controllers() -> None:
    config = read_documents_of(CONFIGS)[0]
    spec = spec_of(config)
    assert [
        operator_status(config, spec, observed(crd=True, pods=1)),
        operator_status(config, spec, observed(crd=True, pods=0)),
        operator_status(config, spec, observed(crd=False, pods=0)),
    ] == [
        OperatorStatus(
            True,
            "UpstreamReady",
            "every CRD and operator pod it needs is there",
            (
                Check("CRD workspaces.kaito.sh v1beta1", True, "installed, serves v1beta1"),
                Check("operator pods in alpha-system", True, "app=alpha: 1 Ready"),
            ),
        ),
        OperatorStatus(
            False,
            "OperatorNotReady",
            "no Ready operator pod in alpha-system matches app=alpha",
            (
                Check("CRD workspaces.kaito.sh v1beta1", True, "installed, serves v1beta1"),
                Check("operator pods in alpha-system", False, "app=alpha: 0 Ready"),
            ),
        ),
        OperatorStatus(
            False,
            "CRDMissing",
            "CRD workspaces.kaito.sh is not installed (and 1 more: no Ready operator pod in "
            "alpha-system matches app=alpha)",
            (
                Check("CRD workspaces.kaito.sh v1beta1", False, "not installed"),
                Check("operator pods in alpha-system", False, "app=alpha: 0 Ready"),
            ),
        ),
    ]


def read_documents_of(text: str) -> list[dict[str, Any]]:
    return [doc.obj for doc in parse_documents(text, "test")]


def test_a_ready_config_with_an_operator_not_ready_is_shown_apart(folder: Path) -> None:
    objects = [doc.obj for doc in read_documents([str(folder)])]
    views = provider_views(objects, build_registry(objects))
    config = objects[0]
    operators = {"alpha": operator_status(config, spec_of(config), observed(crd=True, pods=0))}
    with app_of(folder).test_request_context("/providers"):
        shown = render_template("_providers_readiness.html", view=views[0], operators=operators)
    assert lines(shown) == lines(
        """\
<div class="readiness" role="group" aria-label="Readiness of alpha">
  <div class="readiness-part">
    <h3>Config</h3>
    <p class="ok"><span class="badge">Ready</span> its status says ready</p>
    <p class="bad">Admission refuses this config:</p>
    <ul class="errors"><li><code>spec.selectionRules[1].condition</code>: Invalid value: line 1, column 21: Syntax error: mismatched input &#39;&lt;EOF&gt;&#39;</li></ul>
    <table class="conditions">
      <caption>Status written by the status controller, last heartbeat 2026-12-07T07:00:00Z, Runway v0.1.0</caption>
      <thead><tr><th scope="col">Condition</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Message</th><th scope="col">Since</th></tr></thead>
      <tbody>
      <tr><td>UpstreamReady</td><td>True</td><td>UpstreamReady</td><td>every CRD and operator pod it needs is there</td><td>2026-12-07T06:00:00Z</td></tr>
      </tbody>
    </table>
  </div>
  <div class="readiness-part">
    <h3>Upstream operator</h3>
    <p class="bad"><span class="badge">Not ready</span> OperatorNotReady: no Ready operator pod in alpha-system matches app=alpha</p>
    <table class="checks">
      <caption>Observed now</caption>
      <thead><tr><th scope="col">Check</th><th scope="col">Result</th><th scope="col">Detail</th></tr></thead>
      <tbody>
      <tr><td>CRD workspaces.kaito.sh v1beta1</td><td class="ok">ok</td><td>installed, serves v1beta1</td></tr><tr><td>operator pods in alpha-system</td><td class="bad">failing</td><td>app=alpha: 0 Ready</td></tr>
      </tbody>
    </table>
  </div>
</div>"""
    )
