"""The Gateway providers page (ui/pages/gateway.py) through Flask's test client, offline on a
folder the test writes: the list, admission's verdict, the merge boundary as `runway
gateway-plan` prints it (the ambiguous-name acceptance: both claimants named), the
requested-by stamp, and the outputs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.admission.configs import REQUESTED_BY
from tests.support.paths import ROOT
from tests.support.ui import post_headers
from ui.app import create_app
from ui.gateway_compose import stamped, verdict
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
MODEL = """\
apiVersion: airunway.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: llama-8b
  namespace: models
spec:
  model:
    id: meta-llama/Llama-3.1-8B-Instruct
    servedName: llama-3.1-8b
  provider:
    name: vllm
  resources:
    gpu:
      count: 1
"""
OPENAI = """\
apiVersion: gateway.tokenfactory.mirantis.com/v1alpha1
kind: ExternalModelProvider
metadata:
  name: openai
  namespace: gateway
  annotations:
    gateway.tokenfactory.mirantis.com/requested-by: alice@example.com
spec:
  baseURL: https://api.openai.com/v1
  credentialsSecretRef:
    name: openai-key
    key: apiKey
  models:
    - servedName: gpt-4o
status:
  phase: Ready
  conditions:
    - type: Ready
      status: "True"
      reason: Registered
      message: every model is registered
"""


def lines(text: str) -> str:
    """The answer without its blank lines (Jinja leaves them where blocks were)."""
    return "\n".join(line for line in text.splitlines() if line.strip())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "llama.yaml").write_text(MODEL)
    (source / "openai.yaml").write_text(OPENAI)
    return source


def app_of(folder: Path) -> Flask:
    return create_app(UiSettings(mode=Mode.OFFLINE, sources=(str(folder),), secret_key=KEY))


def signed(client: FlaskClient) -> dict[str, str]:
    """The headers of a same-origin POST of a fresh session (its cookie set by a GET)."""
    return post_headers(client, KEY)


def form(**given: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "source": "form",
        "name": "other",
        "namespace": "team-a",
        "base_url": "https://api.example.com/v1",
        "secret_name": "example-key",
        "secret_key": "apiKey",
        "model_upstream": ["", "", ""],
        "model_served": ["", "", ""],
    }
    return base | given


CONFLICT_YAML = """\
apiVersion: gateway.tokenfactory.mirantis.com/v1alpha1
kind: ExternalModelProvider
metadata:
  name: other
  namespace: team-a
spec:
  baseURL: https://api.example.com/v1
  credentialsSecretRef:
    key: apiKey
    name: example-key
  models:
  - servedName: gpt-4o
  - servedName: llama-3.1-8b
  - servedName: fresh
    upstreamModel: vendor/fresh-1
"""


def test_an_ambiguous_served_name_is_refused_with_every_claimant_named(folder: Path) -> None:
    client = app_of(folder).test_client()
    posted = form(
        model_upstream=["", "", "vendor/fresh-1"],
        model_served=["gpt-4o", "llama-3.1-8b", "fresh"],
    )
    answer = client.post("/gateway/check", data=posted, headers=signed(client))
    assert answer.status_code == 200
    escaped = CONFLICT_YAML.replace("'", "&#39;")
    assert lines(answer.get_data(as_text=True)) == lines(
        f"""\
<div class="verdict">
  <h3>Admission</h3>
  <p class="ok"><span class="badge">Allowed</span> admission accepts this ExternalModelProvider</p>
  <h3>Merge boundary (as <code>runway gateway-plan</code> decides it)</h3>
  <p class="bad" role="alert"><span class="badge">Refused</span> an ambiguous served name registers no claimant:</p>
  <pre class="plan">model     fresh  ExternalModelProvider/team-a/other  -&gt; https://api.example.com/v1
CONFLICT  gpt-4o  claimed by ExternalModelProvider/gateway/openai, ExternalModelProvider/team-a/other; none is registered
CONFLICT  llama-3.1-8b  claimed by ExternalModelProvider/team-a/other, ModelDeployment/models/llama-8b; none is registered
</pre>
  <p class="muted">Offline: nobody is signed in, so the portal stamps no gateway.tokenfactory.mirantis.com/requested-by.</p>
  <h3>The object</h3>
  <pre class="object">{escaped}</pre>
  <p class="muted">Not offered for delivery until admission allows it and no served name is ambiguous.</p>
</div>
<textarea id="gateway-yaml" name="yaml" spellcheck="false" hx-swap-oob="true">{escaped}</textarea>"""
    )


def test_the_refusal_is_gateway_plans_own_line(folder: Path, tmp_path: Path) -> None:
    composed = tmp_path / "composed.yaml"
    composed.write_text(CONFLICT_YAML)
    printed = subprocess.run(
        [sys.executable, "-m", "cli", "gateway-plan", "-f", str(folder), "-f", str(composed)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    client = app_of(folder).test_client()
    answer = client.post(
        "/gateway/check", data={"source": "yaml", "yaml": CONFLICT_YAML}, headers=signed(client)
    )
    shown = re.search(r'<pre class="plan">(.*?)</pre>', answer.get_data(as_text=True), re.S)
    assert shown is not None
    conflicts = [line for line in printed.stdout.splitlines() if line.startswith("CONFLICT")]
    assert [line for line in shown.group(1).splitlines() if line.startswith("CONFLICT")] == (
        conflicts
    )
    assert len(conflicts) == 2


def test_admission_refusals_are_shown_with_their_field_paths(folder: Path) -> None:
    client = app_of(folder).test_client()
    text = """\
apiVersion: gateway.tokenfactory.mirantis.com/v1alpha1
kind: ExternalModelProvider
metadata: {name: leaky, namespace: team-a}
spec:
  baseURL: http://user:pw@10.0.0.1/v1
  apiKey: sk-123
  models: [{servedName: "gpt-*"}]
"""
    answer = client.post(
        "/gateway/check", data={"source": "yaml", "yaml": text}, headers=signed(client)
    )
    body = lines(answer.get_data(as_text=True))
    found = re.search(r'<ul class="errors">.*?</ul>', body, re.S)
    assert found is not None
    assert found.group(0) == (
        '<ul class="errors"><li><code>spec.apiKey</code>: Forbidden: credentials are never '
        "inline; reference a Secret key in spec.credentialsSecretRef</li></ul>"
    )
    assert "<textarea" not in body  # the editor's own text is never overwritten


def test_text_that_is_not_one_object_is_named(folder: Path) -> None:
    client = app_of(folder).test_client()
    headers = signed(client)
    broken = client.post(
        "/gateway/check", data={"source": "yaml", "yaml": "a: [1"}, headers=headers
    )
    two = client.post(
        "/gateway/check", data={"source": "yaml", "yaml": "a: 1\n---\nb: 2\n"}, headers=headers
    )
    assert [lines(broken.get_data(as_text=True)), lines(two.get_data(as_text=True))] == [
        '<p class="bad" role="alert">Not an object: the YAML editor: document 1: not valid YAML '
        "at line 2, column 1: did not find expected &#39;,&#39; or &#39;]&#39;</p>",
        '<p class="bad" role="alert">Not an object: the YAML editor: holds 2 objects; compose one '
        "ExternalModelProvider</p>",
    ]


def test_the_list_shows_phase_conditions_names_and_who_requested(folder: Path) -> None:
    page = app_of(folder).test_client().get("/gateway").get_data(as_text=True)
    found = re.search(r'<table class="emps">.*?</table>', page, re.S)
    assert found is not None
    assert lines(found.group(0)) == lines(
        """\
<table class="emps">
    <thead><tr><th scope="col">Namespace</th><th scope="col">Name</th><th scope="col">Phase</th><th scope="col">Served names claimed</th><th scope="col">Requested by</th><th scope="col">Base URL</th><th scope="col">Conditions</th></tr></thead>
    <tbody>
    <tr>
      <td>gateway</td><td>openai</td><td>Ready</td>
      <td>gpt-4o</td>
      <td>alice@example.com</td>
      <td>https://api.openai.com/v1</td>
      <td><div>Ready=True (Registered): every model is registered</div></td>
    </tr>
    </tbody>
  </table>"""
    )
    composer = re.search(r'<form id="gateway-form".*?</form>', page, re.S)
    assert composer is not None
    names = re.findall(r'<input[^>]*? name="([^"]+)"', composer.group(0))
    assert sorted(set(names)) == [  # a Secret reference only: no field for a key's value
        "base_url",
        "csrf_token",
        "model_served",
        "model_upstream",
        "name",
        "namespace",
        "secret_key",
        "secret_name",
        "source",
    ]


def test_an_allowed_provider_is_delivered_as_a_patch_and_a_download(folder: Path) -> None:
    client = app_of(folder).test_client()
    headers = signed(client)
    posted = form(model_served=["fresh", "", ""], model_upstream=["vendor/fresh-1", "", ""])
    check = client.post("/gateway/check", data=posted, headers=headers).get_data(as_text=True)
    assert '<span class="badge">Allowed</span>' in check and "Refused" not in check
    yaml_text = re.search(r'<pre class="object">(.*?)</pre>', check, re.S).group(1)  # type: ignore[union-attr]
    outputs = re.search(r'<form id="gateway-outputs".*?</form>', check, re.S).group(0)  # type: ignore[union-attr]
    token = headers["X-CSRF-Token"]
    assert lines(outputs) == lines(f"""\
<form id="gateway-outputs" method="post" action="/outputs/download">
    <input type="hidden" name="yaml" value="{yaml_text}">
<section class="panel outputs" aria-labelledby="outputs-title">
  <h2 id="outputs-title">Output</h2>
  <input type="hidden" name="outputs_source" value="gateway">
  <input type="hidden" name="csrf_token" value="{token}">
  <div id="outputs-offer" hx-post="/outputs/offer" hx-include="closest form"
       hx-trigger="load, change from:closest form delay:500ms, input from:closest form delay:800ms"
       hx-swap="innerHTML">
    <p class="muted">Working out what this bundle can be delivered as…</p>
  </div>
  <div id="outputs-result" aria-live="polite"></div>
</section>
  </form>""")
    delivered = {"outputs_source": "gateway", "yaml": yaml_text}
    patch = client.post("/outputs/patch", data=delivered, headers=headers)
    download = client.post("/outputs/download", data=delivered, headers=headers)
    expected_object = """\
apiVersion: gateway.tokenfactory.mirantis.com/v1alpha1
kind: ExternalModelProvider
metadata:
  name: other
  namespace: team-a
spec:
  baseURL: https://api.example.com/v1
  credentialsSecretRef:
    key: apiKey
    name: example-key
  models:
  - servedName: fresh
    upstreamModel: vendor/fresh-1
"""
    assert yaml_text == expected_object
    diff = "".join(f"+{line}\n" for line in expected_object.splitlines())
    assert lines(patch.get_data(as_text=True)) == lines(
        "<p>A patch <code>git apply</code> accepts at the repository's root:</p>\n"
        '<pre class="patch" id="outputs-patch" tabindex="0">diff --git a/gateway/team-a/other.yaml b/gateway/team-a/other.yaml\n'
        "new file mode 100644\n--- /dev/null\n+++ b/gateway/team-a/other.yaml\n@@ -0,0 +1,13 @@\n"
        f"{diff}</pre>\n"
        '<button type="button" class="secondary" data-copy="outputs-patch">Copy the patch</button>'
    )
    assert (download.status_code, download.headers["Content-Disposition"]) == (
        200,
        'attachment; filename="other.yaml"',
    )
    assert download.get_data(as_text=True) == f"# gateway/team-a/other.yaml\n{expected_object}"


def test_a_refused_provider_is_not_delivered(folder: Path) -> None:
    client = app_of(folder).test_client()
    headers = signed(client)
    posted = form(model_served=["gpt-4o", "", ""])
    check = client.post("/gateway/check", data=posted, headers=headers).get_data(as_text=True)
    assert 'id="gateway-outputs"' not in check
    assert (
        '<p class="muted">Not offered for delivery until admission allows it and no served name '
        "is ambiguous.</p>"
    ) in check
    yaml_text = re.search(r'<pre class="object">(.*?)</pre>', check, re.S).group(1)  # type: ignore[union-attr]
    refused = (
        '<p class="error" role="alert">not delivered: admission refuses the object or a '
        "served name is ambiguous (see the checks)</p>"
    )
    delivered = {"outputs_source": "gateway", "yaml": yaml_text}
    for route in ("/outputs/patch", "/outputs/download"):
        answer = client.post(route, data=delivered, headers=headers)
        assert (answer.status_code, lines(answer.get_data(as_text=True))) == (200, refused)
    offer = client.post("/outputs/offer", data=delivered, headers=headers)
    assert lines(offer.get_data(as_text=True)) == refused.replace(
        '"alert">', '"alert">Nothing to deliver yet: '
    )


def test_live_the_signed_in_user_is_stamped_and_the_stamp_cannot_change() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {
            "name": "openai",
            "namespace": "gateway",
            "annotations": {REQUESTED_BY: "mallory"},
        },
        "spec": {"baseURL": "https://api.openai.com/v1", "models": [{"servedName": "gpt-4o"}]},
    }
    out, note = stamped(obj, "bob")
    assert (out["metadata"]["annotations"], note) == (
        {REQUESTED_BY: "bob"},
        f"Stamped {REQUESTED_BY}: bob (the editor said mallory).",
    )
    assert obj["metadata"]["annotations"] == {REQUESTED_BY: "mallory"}  # the input is not changed
    stored = {**obj, "metadata": {**obj["metadata"], "annotations": {REQUESTED_BY: "alice"}}}
    result = verdict(obj, [stored], "bob")
    assert [str(e) for e in result.errors] == [
        f"metadata.annotations[{REQUESTED_BY}]: Immutable: is set when the provider is "
        "created and cannot be added, changed or removed later"
    ]
    assert [c.line for c in result.claims] == [
        "model     gpt-4o  ExternalModelProvider/gateway/openai  -> https://api.openai.com/v1  requested-by=bob"
    ]


TEXT = st.text(st.characters(codec="utf-8"), max_size=80)
YAMLISH = st.one_of(
    TEXT,
    st.sampled_from(
        [
            CONFLICT_YAML,
            OPENAI,
            MODEL,
            "{}",
            "[]",
            "a: *x",
            "kind: ExternalModelProvider\nspec: 3\n",
        ]
    ),
    st.builds(lambda a, b: a + b, st.sampled_from([CONFLICT_YAML, OPENAI]), TEXT),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=st.sampled_from(["form", "yaml", "", "other"]),
    fields=st.dictionaries(
        st.sampled_from(["name", "namespace", "base_url", "secret_name", "secret_key", "yaml"]),
        YAMLISH,
    ),
    served=st.lists(TEXT, max_size=4),
    upstream=st.lists(TEXT, max_size=4),
    route=st.sampled_from(["/gateway/check", "/outputs/patch", "/outputs/download"]),
)
def test_any_posted_provider_gets_a_result_or_a_clear_error_never_a_5xx(
    folder: Path,
    source: str,
    fields: dict[str, str],
    served: list[str],
    upstream: list[str],
    route: str,
) -> None:
    client = app_of(folder).test_client()
    data: dict[str, Any] = fields | {
        **({"source": source} if route == "/gateway/check" else {"outputs_source": "gateway"}),
        "model_served": served,
        "model_upstream": upstream,
    }
    answer = client.post(route, data=data, headers=signed(client))
    body = answer.get_data(as_text=True)
    assert "Traceback" not in body
    assert answer.status_code == 200, body
    if route == "/outputs/download" and answer.mimetype == "application/yaml":
        assert body.startswith("# gateway/"), body
    else:
        assert body.lstrip().startswith(
            ('<p class="bad" role="alert">', '<div class="verdict">', "<p", '<p class="error"')
        ), body
