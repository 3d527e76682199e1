"""A provider's installation on the Providers page: the shipped configs' `airunway.ai/
installation` as Flux or Argo CD objects (each strict-checked against the schema pack), the
equivalent `helm` commands, delivered through the shared outputs (ui/pages/outputs.py, source
"install") as a download, a patch or a commit on a new branch at `--install-path`; an
installation that cannot be written for GitOps is refused with field paths."""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from cli.main import build_parser
from cli.ui import settings_of
from tests.support.gitserver import start_git_server
from tests.support.ui import post_headers
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
    return post_headers(client, KEY)[security.CSRF_HEADER]


def test_argo_cd_objects_are_strict_checked_beside_the_helm_commands(tmp_path: Path) -> None:
    client = app_of(tmp_path).test_client()
    answer = client.get("/providers/install?provider=kaito&flavour=argocd")
    assert answer.status_code == 200
    assert lines(answer.get_data(as_text=True)) == lines(
        f"""\
<p>KAITO&#39;s workspace controller and its CRDs, from KAITO&#39;s Helm repository</p>
<p>Documentation: <a href="https://kaito-project.github.io/kaito/docs/" rel="noopener noreferrer">https://kaito-project.github.io/kaito/docs/</a></p>
<p>File <code>infrastructure/providers/kaito.yaml</code>: <span class="ok">every object passes the strict check</span></p>
<div class="object">
  <h3>Application kaito-workspace:
  <span class="ok">strict check passed</span></h3>
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
<h3>The same install with Helm (copy and run it yourself; the portal never runs Helm)</h3>
<pre class="helm">helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito
helm repo update kaito
helm upgrade --install kaito-workspace kaito/workspace --version 0.10.0 --namespace kaito-workspace --create-namespace</pre>
{STEPS}"""
    )


def flat(text: str) -> str:
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", text)).strip().replace(" </p>", "</p>")


OFFERED = (
    '<div class="output-buttons"><button type="submit" class="secondary" '
    'formaction="/outputs/download" formmethod="post">Download YAML</button>'
    '<button type="button" class="secondary" hx-post="/outputs/patch" '
    'hx-include="closest form" hx-target="#outputs-result">Show patch</button>'
)
BRANCH_BUTTON = (
    '<button type="button" hx-post="/outputs/branch" hx-include="closest form" '
    'hx-target="#outputs-result" hx-disabled-elt="this">Commit to a new branch</button>'
)
INSTALL_FORM = {"outputs_source": "install", "provider": "kaito", "flavour": "flux"}


def test_the_page_carries_one_install_form_with_the_output_fragment(tmp_path: Path) -> None:
    client = app_of(tmp_path).test_client()
    token = token_of(client)
    page = client.get("/providers?provider=kaito&flavour=argocd").get_data(as_text=True)
    form = page[page.index('<form class="install"') : page.index("</form>") + 7]
    head = form[: form.index('<div id="install-view"')]
    assert lines(head) == lines(
        """\
<form class="install" id="install-form" action="/outputs/download" method="post">
  <fieldset class="install-choice" hx-get="/providers/install" hx-trigger="change"
            hx-include="#install-provider, #install-form [name='flavour']" hx-target="#install-view">
    <legend>What to install</legend>
    <label for="install-provider">Provider</label>
    <select id="install-provider" name="provider">
    <option value="dynamo">NVIDIA Dynamo (dynamo)</option>
    <option value="kaito" selected>KAITO (kaito)</option>
    <option value="kuberay">KubeRay (kuberay)</option>
    <option value="llmd">llm-d (llmd)</option>
    <option value="vllm">Direct vLLM (vllm)</option>
    </select>
    <fieldset>
      <legend>GitOps engine</legend>
      <label class="inline"><input type="radio" name="flavour" value="flux"> Flux</label>
      <label class="inline"><input type="radio" name="flavour" value="argocd" checked> Argo CD</label>
    </fieldset>
  </fieldset>"""
    )
    assert lines(form[form.index('<section class="panel outputs"') :]) == lines(
        f"""\
<section class="panel outputs" aria-labelledby="outputs-title">
  <h2 id="outputs-title">Output</h2>
  <input type="hidden" name="outputs_source" value="install">
  <input type="hidden" name="csrf_token" value="{token}">
  <div id="outputs-offer" hx-post="/outputs/offer" hx-include="closest form"
       hx-trigger="load, change from:closest form delay:500ms, input from:closest form delay:800ms"
       hx-swap="innerHTML">
    <p class="muted">Working out what this bundle can be delivered as…</p>
  </div>
  <div id="outputs-result" aria-live="polite"></div>
</section>
</form>"""
    )
    assert page.count('<section class="panel outputs"') == 1  # one set of output controls


def test_flux_objects_are_delivered_as_a_download_and_a_patch_at_the_install_path(
    tmp_path: Path,
) -> None:
    client = app_of(tmp_path, "clusters/dev/providers").test_client()
    headers = {"X-CSRF-Token": token_of(client), "Origin": "http://localhost"}
    offer = client.post("/outputs/offer", data=INSTALL_FORM, headers=headers)
    download = client.post("/outputs/download", data=INSTALL_FORM, headers=headers)
    patch = client.post("/outputs/patch", data=INSTALL_FORM, headers=headers)
    assert flat(offer.get_data(as_text=True)) == (
        "<p>Flux install of kaito: clusters/dev/providers/kaito.yaml</p>" + OFFERED + "</div>"
    )
    assert (download.status_code, download.headers["Content-Disposition"]) == (
        200,
        'attachment; filename="kaito.yaml"',
    )
    assert download.get_data(as_text=True) == f"# clusters/dev/providers/kaito.yaml\n---\n{FLUX}"
    added = "".join(f"+{line}\n" for line in f"---\n{FLUX}".splitlines())
    assert lines(patch.get_data(as_text=True)) == lines(
        "<p>A patch <code>git apply</code> accepts at the repository's root:</p>\n"
        '<pre class="patch" id="outputs-patch" tabindex="0">diff --git a/clusters/dev/providers/kaito.yaml '
        "b/clusters/dev/providers/kaito.yaml\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/clusters/dev/providers/kaito.yaml\n@@ -0,0 +1,30 @@\n"
        f"{added}</pre>\n"
        '<button type="button" class="secondary" data-copy="outputs-patch">Copy the patch</button>'
    )
    shown = patch.get_data(as_text=True)
    text = html.unescape(
        shown[
            shown.index('<pre class="patch" id="outputs-patch" tabindex="0">')
            + len('<pre class="patch" id="outputs-patch" tabindex="0">') : shown.index("</pre>")
        ]
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "apply", "-"], input=text, text=True, cwd=tmp_path, check=True)
    written = tmp_path / "clusters" / "dev" / "providers" / "kaito.yaml"
    assert written.read_text() == f"---\n{FLUX}"


def test_an_unknown_provider_or_flavour_is_named_by_the_offer(tmp_path: Path) -> None:
    client = app_of(tmp_path).test_client()
    headers = {"X-CSRF-Token": token_of(client), "Origin": "http://localhost"}
    answers = [
        flat(client.post("/outputs/offer", data=form, headers=headers).get_data(as_text=True))
        for form in (
            {**INSTALL_FORM, "provider": "nope"},
            {**INSTALL_FORM, "flavour": "helm"},
        )
    ]
    assert answers == [
        '<p class="error" role="alert">Nothing to deliver yet: provider: no '
        "InferenceProviderConfig &#39;nope&#39; in the configs Runway ships</p>",
        '<p class="error" role="alert">Nothing to deliver yet: flavour must be one of flux, '
        "argocd, not &#39;helm&#39;</p>",
    ]


def test_with_actions_and_a_repo_the_install_is_committed_to_a_new_branch(
    tmp_path: Path,
) -> None:
    server = start_git_server(tmp_path / "server")
    try:
        url = server.create("gitops")
        site = tmp_path / "site"
        for args in (
            ["init", "-q", "-b", "main", str(site)],
            ["-C", str(site), "commit", "-q", "--allow-empty", "-m", "first"],
            ["-C", str(site), "remote", "add", "origin", url],
            ["-C", str(site), "push", "-q", "origin", "main"],
        ):
            subprocess.run(
                ["git", "-c", "user.name=Site", "-c", "user.email=s@example.com", *args],
                check=True,
                capture_output=True,
                timeout=30,
            )
        settings = UiSettings(
            mode=Mode.OFFLINE,
            sources=(str(site),),
            actions=True,
            repo=str(site),
            secret_key=KEY,
        )
        client = create_app(settings).test_client()
        headers = {"X-CSRF-Token": token_of(client), "Origin": "http://localhost"}
        offer = client.post("/outputs/offer", data=INSTALL_FORM, headers=headers)
        answer = client.post("/outputs/branch", data=INSTALL_FORM, headers=headers)
        bare = server.root / "gitops.git"
        heads = git_out(bare, "for-each-ref", "--format=%(refname:lstrip=2) %(objectname)")
        branch, commit = next(h.split() for h in heads.splitlines() if h.startswith("runway-ui/"))
        tree = git_out(bare, "ls-tree", "-r", "--name-only", commit).splitlines()
        written = git_out(bare, "show", f"{commit}:infrastructure/providers/kaito.yaml")
    finally:
        server.stop()
    assert flat(offer.get_data(as_text=True)) == (
        "<p>Flux install of kaito: infrastructure/providers/kaito.yaml</p>"
        + OFFERED
        + BRANCH_BUTTON
        + "</div>"
    )
    assert branch == f"runway-ui/flux-install-of-kaito-{commit[:12]}"
    assert flat(answer.get_data(as_text=True)) == (
        f'<p class="ok" role="status">Committed Flux install of kaito as <code>{commit}</code> '
        f"on the new branch <code>{branch}</code> of origin (made on main).</p>"
    )
    assert tree == ["infrastructure/providers/kaito.yaml"]
    assert written == f"---\n{FLUX}"


def git_out(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


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
    headers = {"X-CSRF-Token": token_of(client), "Origin": "http://localhost"}
    answer = client.get("/providers/install?provider=gamma&flavour=flux").get_data(as_text=True)
    start = answer.index('<p class="bad" role="alert">')
    assert lines(answer[start : answer.index("</ul>", start) + 5]) == lines(
        """\
<p class="bad" role="alert">The installation cannot be written as Flux objects:</p>
<ul class="errors"><li><code>metadata.annotations[airunway.ai/installation].helmCharts[0].chart</code>: Invalid value: &#39;https://charts.example.com/gamma.tgz&#39;: a GitOps install needs &lt;repository&gt;/&lt;chart&gt; naming one of helmRepos (g), not a URL or a local path</li><li><code>metadata.annotations[airunway.ai/installation].helmCharts[0].version</code>: Required value: a GitOps install pins the chart version</li></ul>"""
    )
    assert "Download" not in answer
    form = {**INSTALL_FORM, "provider": "gamma"}
    offer = client.post("/outputs/offer", data=form, headers=headers).get_data(as_text=True)
    assert flat(offer) == (
        '<p class="error" role="alert">Nothing to deliver yet: the installation of gamma cannot '
        "be written as Flux objects (shown above)</p>"
    )


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
