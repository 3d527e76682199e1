"""A provider's installation on the Providers page: the shipped configs' `airunway.ai/
installation` as Flux or Argo CD objects (each strict-checked against the schema pack), the
equivalent `helm` commands, delivered as a download or a patch at `--install-path`; an
installation that cannot be written for GitOps is refused with field paths."""

from __future__ import annotations

import html
import subprocess
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from cli.main import build_parser
from cli.ui import settings_of
from ui import security
from ui.app import create_app
from ui.settings import Mode, UiSettings
from webhook.settings import SettingsError

KEY = b"k" * 32
STEPS = (
    "<details>\n"
    "  <summary>The config's installation steps (as its annotation gives them)</summary>\n"
    "  <ol><li><strong>Add the Helm repository</strong>: Adds the chart repository of the KAITO "
    "workspace controller to Helm as kaito.<pre>helm repo add kaito "
    "https://kaito-project.github.io/kaito/charts/kaito</pre></li><li><strong>Update the "
    "repository index</strong>: Reads the repository&#39;s chart list, so version 0.10.0 is "
    "found.<pre>helm repo update kaito</pre></li><li><strong>Install the KAITO workspace "
    "controller</strong>: Installs or upgrades release kaito-workspace (chart workspace 0.10.0) "
    "in namespace kaito-workspace, creating it if needed.<pre>helm upgrade --install "
    "kaito-workspace kaito/workspace --version 0.10.0 --namespace kaito-workspace "
    "--create-namespace</pre></li></ol>\n"
    "</details>"
)
FLUX = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: kaito
  namespace: flux-system
spec:
  interval: 1h
  url: https://kaito-project.github.io/kaito/charts/kaito
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kaito-workspace
  namespace: flux-system
spec:
  chart:
    spec:
      chart: workspace
      sourceRef:
        kind: HelmRepository
        name: kaito
        namespace: flux-system
      version: 0.10.0
  install:
    createNamespace: true
  interval: 10m
  releaseName: kaito-workspace
  storageNamespace: kaito-workspace
  targetNamespace: kaito-workspace
"""


def lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip())


def app_of(folder: Path, install_path: str = "infrastructure/providers") -> Flask:
    settings = UiSettings(
        mode=Mode.OFFLINE, sources=(str(folder),), secret_key=KEY, install_path=install_path
    )
    return create_app(settings)


def token_of(client: FlaskClient) -> str:
    answer = client.get("/about")
    cookie = answer.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    return security.csrf_token(KEY, cookie)


def test_argo_cd_objects_are_strict_checked_beside_the_helm_commands(tmp_path: Path) -> None:
    client = app_of(tmp_path).test_client()
    token = token_of(client)
    answer = client.get("/providers/kaito/install?engine=argocd")
    assert answer.status_code == 200
    assert lines(answer.get_data(as_text=True)) == lines(
        f"""\
<div class="install">
<p>KAITO&#39;s workspace controller and its CRDs, from KAITO&#39;s Helm repository</p>
<p>Documentation: <a href="https://kaito-project.github.io/kaito/docs/" rel="noopener noreferrer">https://kaito-project.github.io/kaito/docs/</a></p>
<form class="install-engine" action="/providers/kaito/install" method="get"
      hx-get="/providers/kaito/install" hx-target="#install-kaito" hx-trigger="change">
  <fieldset>
    <legend>GitOps engine</legend>
    <label class="inline"><input type="radio" name="engine" value="flux"> Flux</label>
    <label class="inline"><input type="radio" name="engine" value="argocd" checked> Argo CD</label>
    <button type="submit" class="secondary">Show</button>
  </fieldset>
</form>
<p>File <code>infrastructure/providers/kaito.yaml</code>: <span class="ok">every object passes the strict check</span></p>
<div class="object">
  <h4>Application kaito-workspace:
  <span class="ok">strict check passed</span></h4>
  <pre>apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: kaito-workspace
  namespace: argocd
spec:
  destination:
    namespace: kaito-workspace
    server: https://kubernetes.default.svc
  project: default
  source:
    chart: workspace
    helm:
      releaseName: kaito-workspace
    repoURL: https://kaito-project.github.io/kaito/charts/kaito
    targetRevision: 0.10.0
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
    syncOptions:
    - CreateNamespace=true
    - ServerSideApply=true
</pre>
</div>
<h4>The same install with Helm (copy and run it yourself; the portal never runs Helm)</h4>
<pre class="helm">helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito
helm repo update kaito
helm upgrade --install kaito-workspace kaito/workspace --version 0.10.0 --namespace kaito-workspace --create-namespace</pre>
<div class="outputs">
  <form action="/providers/kaito/install/download" method="post">
    <input type="hidden" name="csrf_token" value="{token}">
    <input type="hidden" name="engine" value="argocd">
    <button type="submit">Download</button>
  </form>
  <form hx-post="/providers/kaito/install/patch" hx-target="#patch-kaito" action="/providers/kaito/install/patch" method="post">
    <input type="hidden" name="csrf_token" value="{token}">
    <input type="hidden" name="engine" value="argocd">
    <button type="submit" class="secondary">Patch</button>
  </form>
</div>
<div id="patch-kaito" aria-live="polite"></div>
{STEPS}
</div>"""
    )


def test_flux_objects_are_delivered_as_a_download_and_a_patch_at_the_install_path(
    tmp_path: Path,
) -> None:
    client = app_of(tmp_path, "clusters/dev/providers").test_client()
    headers = {"X-CSRF-Token": token_of(client), "Origin": "http://localhost"}
    download = client.post(
        "/providers/kaito/install/download", data={"engine": "flux"}, headers=headers
    )
    patch = client.post("/providers/kaito/install/patch", data={"engine": "flux"}, headers=headers)
    assert (download.status_code, download.headers["Content-Disposition"]) == (
        200,
        'attachment; filename="kaito-flux.yaml"',
    )
    assert download.get_data(as_text=True) == f"# clusters/dev/providers/kaito.yaml\n---\n{FLUX}"
    added = "".join(f"+{line}\n" for line in f"---\n{FLUX}".splitlines())
    assert lines(patch.get_data(as_text=True)) == lines(
        "<p>A patch for <code>git apply</code> at the repository's root:</p>\n"
        '<pre class="patch">diff --git a/clusters/dev/providers/kaito.yaml '
        "b/clusters/dev/providers/kaito.yaml\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/clusters/dev/providers/kaito.yaml\n@@ -0,0 +1,30 @@\n"
        f"{added}</pre>"
    )
    shown = patch.get_data(as_text=True)
    text = html.unescape(shown[shown.index('<pre class="patch">') + 19 : shown.index("</pre>")])
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "apply", "-"], input=text, text=True, cwd=tmp_path, check=True)
    written = tmp_path / "clusters" / "dev" / "providers" / "kaito.yaml"
    assert written.read_text() == f"---\n{FLUX}"


def test_an_installation_gitops_cannot_pin_is_refused_with_field_paths(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        """\
apiVersion: airunway.ai/v1alpha1
kind: InferenceProviderConfig
metadata:
  name: gamma
  annotations:
    airunway.ai/installation: '{"helmRepos": [{"name": "g", "url": "https://charts.example.com"}], "helmCharts": [{"name": "gamma", "chart": "https://charts.example.com/gamma.tgz", "namespace": "gamma"}]}'
spec:
  capabilities:
    engines: [{name: vllm, servingModes: [aggregated], gpuSupport: true}]
"""
    )
    client = app_of(tmp_path).test_client()
    answer = client.get("/providers/gamma/install?engine=flux").get_data(as_text=True)
    start = answer.index('<p class="bad" role="alert">')
    assert lines(answer[start : answer.index("</ul>", start) + 5]) == lines(
        """\
<p class="bad" role="alert">The installation cannot be written as Flux objects:</p>
<ul class="errors"><li><code>metadata.annotations[airunway.ai/installation].helmCharts[0].chart</code>: Invalid value: &#39;https://charts.example.com/gamma.tgz&#39;: a GitOps install needs &lt;repository&gt;/&lt;chart&gt; naming one of helmRepos (g), not a URL or a local path</li><li><code>metadata.annotations[airunway.ai/installation].helmCharts[0].version</code>: Required value: a GitOps install pins the chart version</li></ul>"""
    )
    assert "Download" not in answer


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], "infrastructure/providers"),
        (["--install-path", "clusters/dev/providers"], "clusters/dev/providers"),
        (
            ["--install-path", "../outside"],
            "'../outside' is not a plain path inside the repository",
        ),
        (["--install-path", "/etc"], "'/etc' is not a path inside the repository"),
    ],
)
def test_the_install_path_is_a_path_inside_the_repository(
    tmp_path: Path, given: list[str], expected: str
) -> None:
    args = build_parser().parse_args(["ui", "--offline", "-f", str(tmp_path), *given])
    try:
        found = settings_of(args).install_path
    except SettingsError as err:
        found = str(err).removeprefix("--install-path: ")
    assert found == expected
