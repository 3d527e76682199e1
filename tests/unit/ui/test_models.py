"""The Models page through Flask's test client: the page, the form <-> YAML sync, the previews
(what `validate`, `explain` and `render` say, from the very functions they call), the catalog,
and the outputs (download, and a patch that `git apply` takes and whose result validates and
renders)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.output.folders import METADATA_FILE
from tests.support.paths import EXAMPLES, example_model_deployments
from tests.support.ui import Portal, cli, element, unescaped
from ui.app import create_app
from ui.compose import blank, merged, text_of, values_of
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
GATEWAY = "gateways/inference"
REQUEST_BOUND = 5.0  # seconds one answer may take in the property test (never a timing goal)


def app_of(*sources: Path) -> Flask:
    return create_app(
        UiSettings(mode=Mode.OFFLINE, sources=tuple(map(str, sources)), secret_key=KEY)
    )


def pre_text(html: str, ident: str) -> str:
    return unescaped(element(html, "pre", ident).split(">", 1)[1].rsplit("</pre>", 1)[0])


@pytest.fixture
def portal() -> Portal:
    return Portal(app_of(EXAMPLES))


# -- compose: the form merged into the object, the object read into the form ----------------


def test_the_form_merges_into_the_object_and_keeps_every_field_it_does_not_show() -> None:
    obj = yaml.safe_load((EXAMPLES / "kaito-overrides.yaml").read_text())
    form = values_of(obj) | {"engine": "", "gpu_count": "2", "gateway": "on", "extra_args": "a\nb"}
    assert merged(obj, form) == {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "phi-kaito", "namespace": "models"},
        "spec": {
            "model": {"id": "microsoft/Phi-4-mini-instruct"},
            "provider": {
                "name": "kaito",
                "overrides": {
                    "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
                    "inference": {"config": "phi-inference-params"},
                },
            },
            "engine": {"extraArgs": ["a", "b"]},
            "scaling": {"replicas": 1},
            "resources": {"gpu": {"count": 2}},
            "gateway": {"enabled": True},
        },
    }


def test_clearing_a_field_removes_it_and_the_mappings_it_leaves_empty() -> None:
    obj = blank() | {"spec": {"model": {"id": "m"}, "engine": {"type": "vllm"}}}
    form = values_of(obj) | {"engine": ""}
    assert merged(obj, form)["spec"] == {"model": {"id": "m"}}


def test_a_cleared_box_removes_true_and_keeps_false() -> None:
    on = blank() | {"spec": {"model": {"id": "m"}, "gateway": {"enabled": True, "modelName": "x"}}}
    off = blank() | {"spec": {"model": {"id": "m"}, "gateway": {"enabled": False}}}
    form = {"name": "my-model"}
    assert merged(on, form)["spec"]["gateway"] == {"modelName": "x"}
    assert merged(off, form)["spec"]["gateway"] == {"enabled": False}


def test_a_number_that_is_not_one_is_kept_as_written_for_admission_to_name() -> None:
    obj = blank()
    assert merged(obj, {"gpu_count": "two"})["spec"]["resources"] == {"gpu": {"count": "two"}}


# -- the page and its previews ---------------------------------------------------------------


def test_a_picked_example_fills_the_form_and_the_editor(portal: Portal) -> None:
    html = portal.get("/models?pick=source:models/mistral-llmd")
    assert 'value="source:models/mistral-llmd" selected' in html
    editor = element(html, "textarea", "models-yaml")
    obj = yaml.safe_load(editor.split(">", 1)[1].rsplit("</textarea>", 1)[0])
    assert obj == yaml.safe_load((EXAMPLES / "llmd-explicit.yaml").read_text())
    assert element(html, "select", "models-f-provider").count(" selected") == 1
    assert '<option value="llmd" selected>llmd</option>' in html
    assert '<input type="checkbox" id="models-f-gateway" name="gateway" value="on" checked>' in html


def test_the_previews_say_what_validate_and_explain_print(portal: Portal) -> None:
    html = portal.get("/models?pick=source:models/qwen-7b")
    source = str(EXAMPLES / "vllm-1gpu.yaml")
    validated = cli("validate", source)
    explained = cli("explain", source)
    assert validated == (0, pre_text(html, "models-verdict-text") + "1 allowed, 0 denied\n")
    assert explained == (0, pre_text(html, "models-explain-text"))
    assert element(html, "p", "models-verdict") == (
        '<p id="models-verdict" class="ok">models/qwen-7b: allowed</p>'
    )


@pytest.mark.parametrize(
    ("name", "obj"), example_model_deployments(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_example_previews_as_validate_and_explain_say(
    portal: Portal, tmp_path: Path, name: str, obj: dict[str, Any]
) -> None:
    html = portal.get(
        f"/models?pick=source:{obj['metadata']['namespace']}/{obj['metadata']['name']}"
    )
    alone = tmp_path / "one.yaml"
    alone.write_text(text_of(obj))
    # the portal renders with its Gateway (GATEWAY), so validate is given it too
    status, said = cli("validate", str(alone), "--gateway", GATEWAY)
    summary = "1 allowed, 0 denied\n" if status == 0 else "0 allowed, 1 denied\n"
    assert said == pre_text(html, "models-verdict-text") + summary
    assert cli("explain", str(alone)) == (0, pre_text(html, "models-explain-text"))


@pytest.mark.parametrize(
    ("name", "obj"), example_model_deployments(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_example_previews_the_files_render_writes_or_its_error(
    portal: Portal, tmp_path: Path, name: str, obj: dict[str, Any]
) -> None:
    key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
    html = portal.get(f"/models?pick=source:{key}")
    alone = tmp_path / "one.yaml"
    alone.write_text(text_of(obj))
    out = tmp_path / "gitops"
    status, said = cli("render", str(alone), "--repo", str(out), "--gateway", GATEWAY)
    shown = re.findall(
        r"<summary><code>([^<]*)</code>.*?<pre tabindex=\"0\">(.*?)</pre>", html, re.S
    )
    if status == 0:
        written = {
            str(p.relative_to(out)): p.read_text()
            for p in (out / "rendered" / key).rglob("*")
            if p.name != METADATA_FILE  # where the render came from: no object to preview
        }
        assert {path: unescaped(text) for path, text in shown} == written
    else:
        error = said.splitlines()[0].split(": not rendered (previous output kept): ", 1)[1]
        assert unescaped(element(html, "p", "models-render-error")) == (
            f'<p class="bad" id="models-render-error">Not rendered: {error}</p>'
        )


def test_the_render_preview_lists_the_files_render_writes(portal: Portal, tmp_path: Path) -> None:
    html = portal.get("/models?pick=source:models/mistral-llmd")
    shown = re.findall(
        r"<summary><code>([^<]*)</code> <strong>([^<]*)</strong> <span[^>]*>([^<]*)", html
    )
    status, _ = cli(
        "render",
        str(EXAMPLES / "llmd-explicit.yaml"),
        "--repo",
        str(tmp_path),
        "--gateway",
        GATEWAY,
    )
    written = sorted(
        str(p.relative_to(tmp_path))
        for p in (tmp_path / "rendered" / "models" / "mistral-llmd").rglob("*.yaml")
    )
    assert status == 0
    assert sorted(path for path, _, _ in shown) == written
    for path, kind, check in shown:
        text = (tmp_path / path).read_text()
        assert yaml.safe_load(text)["kind"] == kind
        if kind not in ("ModelDeployment", "Kustomization"):
            assert check.startswith("strict check passed (")
    assert element(html, "p", "models-render-ok") == (
        '<p class="ok" id="models-render-ok">14 files, every upstream object strictly checked.</p>'
    )


def test_offline_the_fit_section_says_there_is_no_cluster(portal: Portal) -> None:
    html = portal.get("/models")
    assert element(html, "p", "models-fit") == (
        '<p id="models-fit">Offline: there is no cluster, so no nodes to fit the GPU request to.</p>'
    )


def test_a_denied_object_shows_each_error_with_its_field(portal: Portal) -> None:
    html = portal.get("/models")
    assert element(html, "table", "models-errors") == (
        '<table id="models-errors">\n'
        "    <caption>Errors by field</caption>\n"
        '    <thead><tr><th scope="col">Field</th><th scope="col">Error</th></tr></thead>\n'
        "    <tbody><tr><td><code>spec.model.id</code></td><td>Required value: required when "
        "spec.model.source is huggingface</td></tr></tbody>\n"
        "  </table>"
    )


def test_a_form_change_answers_the_editor_with_the_merged_object(portal: Portal) -> None:
    text = (EXAMPLES / "vllm-1gpu.yaml").read_text()
    obj = yaml.safe_load(text)
    form = values_of(obj) | {"yaml": text, "engine": "vllm", "provider": "llmd", "gateway": "on"}
    answer = portal.post("/models/form", form | {"route_gateway": GATEWAY})
    html = answer.get_data(as_text=True)
    expected = obj | {
        "spec": obj["spec"]
        | {
            "engine": {"contextLength": 32768, "type": "vllm"},
            "provider": {"name": "llmd"},
            "gateway": {"enabled": True},
        }
    }
    assert answer.status_code == 200
    assert html.startswith('<label for="models-yaml">ModelDeployment (YAML)</label>\n<textarea')
    assert element(html, "textarea", "models-yaml").split(">", 1)[1] == (
        f"\n{text_of(expected)}</textarea>"
    )
    assert '<div id="models-previews" aria-live="polite" hx-swap-oob="true">' in html
    kinds = re.findall(r"</code> <strong>([^<]*)</strong>", html)
    assert {"InferencePool", "HTTPRoute"} <= set(kinds)


def test_a_yaml_edit_answers_the_fields(portal: Portal) -> None:
    text = (EXAMPLES / "sglang.yaml").read_text()
    answer = portal.post("/models/yaml", {"yaml": text, "route_gateway": GATEWAY})
    html = answer.get_data(as_text=True)
    values = values_of(yaml.safe_load(text))
    assert answer.status_code == 200
    assert f'<input type="text" id="models-f-name" name="name" value="{values["name"]}">' in html
    assert '<option value="sglang" selected>sglang</option>' in html


def test_bad_yaml_is_an_error_with_its_line_and_the_fields_stay(portal: Portal) -> None:
    form = {"yaml": "kind: ModelDeployment\nspec: [\n", "name": "kept", "route_gateway": GATEWAY}
    answer = portal.post("/models/yaml", form)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200
    assert element(html, "p", "models-error") == (
        '<p class="bad" role="alert" id="models-error">editor: document 1: not valid YAML at '
        "line 3, column 1: did not find expected node content</p>"
    )
    assert '<input type="text" id="models-f-name" name="name" value="kept">' in html


def test_a_form_change_on_bad_yaml_keeps_the_text_and_says_why(portal: Portal) -> None:
    form = {"yaml": "a: b\n", "engine": "vllm", "route_gateway": GATEWAY}
    html = portal.post("/models/form", form).get_data(as_text=True)
    assert element(html, "textarea", "models-yaml").split(">", 1)[1] == "\na: b\n</textarea>"
    assert element(html, "p", "models-error") == (
        '<p class="bad" role="alert" id="models-error">editor: expected airunway.ai/v1alpha1 '
        "ModelDeployment, got None None (fix the YAML first: the form changes the object it "
        "holds)</p>"
    )


def test_the_catalog_holds_the_sources_the_examples_and_the_presets(portal: Portal) -> None:
    html = portal.get("/models")
    groups = re.findall(r'<optgroup label="([^"]*)">', html)
    assert groups == ["In the source folders", "kaito presets"]
    preset = "preset:kaito:microsoft/phi-3.5-mini-instruct"
    assert f'<option value="{preset}">' in html
    picked = portal.get(f"/models?pick={preset}")
    assert (
        '<input type="text" id="models-f-model_id" name="model_id" '
        'value="microsoft/phi-3.5-mini-instruct" aria-describedby="models-f-model_id-hint">'
    ) in picked
    assert element(picked, "p", "models-verdict").endswith(": allowed</p>")


def test_an_unknown_pick_says_so(portal: Portal) -> None:
    html = portal.get("/models?pick=nothing")
    assert (
        '<p class="bad" role="alert">There is no nothing in the catalog; starting from a new '
        "ModelDeployment.</p>"
    ) in html


# -- outputs -----------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A Git repository holding a copy of examples/ (committed)."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root / "examples")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "examples")
    yield root


def git(root: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def patched(repo: Path, text: str) -> str:
    """The patch the page makes for `text`, applied in `repo` after `git apply --check`."""
    portal = Portal(app_of(repo / "examples"))
    html = portal.post(
        "/outputs/patch", {"outputs_source": "models", "yaml": text, "route_gateway": GATEWAY}
    ).get_data(as_text=True)
    patch = patch_of(html)
    (repo.parent / "p.patch").write_text(patch)
    git(repo, "apply", "--check", str(repo.parent / "p.patch"))
    git(repo, "apply", str(repo.parent / "p.patch"))
    return patch


def patch_of(html: str) -> str:
    """The patch of /outputs/patch's answer (its one <pre class="patch" id="outputs-patch" tabindex="0">)."""
    found = re.search(r'<pre class="patch" id="outputs-patch" tabindex="0">(.*?)</pre>', html, re.S)
    assert found is not None, html
    return unescaped(found.group(1))


DENIED = (
    '<p class="error" role="alert">admission denies this object (see the verdict): nothing is '
    "delivered</p>"
)


def outputs(portal: Portal, delivery: str, text: str) -> str:
    """/outputs/<delivery>'s answer for the Models page's form holding `text`, stripped."""
    form = {"outputs_source": "models", "yaml": text, "route_gateway": GATEWAY}
    answer = portal.post(f"/outputs/{delivery}", form)
    assert answer.status_code == 200
    return str(answer.get_data(as_text=True)).strip()


def validates_and_renders(repo: Path, path: Path) -> None:
    status, said = cli("validate", str(path))
    assert status == 0, said
    out = repo.parent / "gitops"
    status, said = cli("render", str(path), "--repo", str(out), "--gateway", GATEWAY)
    assert status == 0, said


def test_a_new_model_is_a_new_file_that_validates_and_renders(repo: Path) -> None:
    obj = yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text())
    obj["metadata"] = {"name": "new-model", "namespace": "team-a"}
    obj["spec"] |= {"provider": {"name": "llmd"}, "gateway": {"enabled": True}}
    patch = patched(repo, text_of(obj))
    assert patch.startswith(
        "diff --git a/examples/team-a/new-model.yaml b/examples/team-a/new-model.yaml\n"
        "new file mode 100644\n--- /dev/null\n+++ b/examples/team-a/new-model.yaml\n"
    )
    written = repo / "examples" / "team-a" / "new-model.yaml"
    assert yaml.safe_load(written.read_text()) == obj
    validates_and_renders(repo, written)


def test_a_model_the_sources_define_is_replaced_in_its_own_file(repo: Path) -> None:
    source = repo / "examples" / "vllm-1gpu.yaml"
    before = source.read_text()
    obj = yaml.safe_load(before)
    obj["spec"]["scaling"] = {"replicas": 2}
    patch = patched(repo, text_of(obj))
    assert patch.startswith(
        "diff --git a/examples/vllm-1gpu.yaml b/examples/vllm-1gpu.yaml\n"
        "--- a/examples/vllm-1gpu.yaml\n+++ b/examples/vllm-1gpu.yaml\n"
    )
    comments = [line for line in before.splitlines() if line.startswith("#")]
    after = source.read_text()
    assert after == "\n".join(comments) + "\n" + text_of(obj)
    assert list((repo / "examples").rglob("qwen-7b.yaml")) == []
    validates_and_renders(repo, source)


def test_a_denied_object_gets_no_patch(portal: Portal) -> None:
    html = outputs(portal, "patch", text_of(blank()))
    assert html == DENIED


def test_download_is_an_attachment_named_after_the_object(portal: Portal) -> None:
    text = (EXAMPLES / "sglang.yaml").read_text()
    obj = yaml.safe_load(text)
    answer = portal.post(
        "/outputs/download", {"outputs_source": "models", "yaml": text, "route_gateway": GATEWAY}
    )
    assert answer.status_code == 200
    assert answer.headers["Content-Disposition"] == 'attachment; filename="sglang.yaml"'
    assert answer.get_data(as_text=True) == f"# examples/sglang.yaml\n{text}"
    changed = obj | {"metadata": obj["metadata"] | {"labels": {"team": "a"}}}
    answer = portal.post(
        "/outputs/download",
        {"outputs_source": "models", "yaml": text_of(changed), "route_gateway": GATEWAY},
    )
    comments = "".join(f"{line}\n" for line in text.splitlines() if line.startswith("#"))
    assert answer.get_data(as_text=True) == f"# examples/sglang.yaml\n{comments}{text_of(changed)}"


# -- any text at all --------------------------------------------------------------------------

TOKENS = [*"abc:-[]{}#&*!|>'\"\n\t 0123.,?%@`\\", "kind: ModelDeployment\n", "spec:\n  ", "---\n"]
YAMLISH = st.lists(st.sampled_from(TOKENS), max_size=120).map("".join)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.one_of(YAMLISH, st.text(max_size=300), st.just(text_of(blank()))))
def test_any_text_gets_a_page_with_previews_or_an_error(portal: Portal, text: str) -> None:
    started = time.monotonic()
    answer = portal.post("/models/yaml", {"yaml": text, "route_gateway": GATEWAY})
    took = time.monotonic() - started
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200
    assert ('id="models-verdict"' in html) != ('id="models-error"' in html)
    assert took < REQUEST_BOUND


def test_the_repository_policy_judges_the_file_the_patch_writes(repo: Path) -> None:
    policy = "kind: SourcePolicy\nrules:\n  - paths: ['examples/**']\n    namespaces: [models]\n"
    (repo / ".runway").mkdir()
    (repo / ".runway" / "policy.yaml").write_text(policy)
    obj = yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text())
    obj["metadata"] = {"name": "elsewhere", "namespace": "team-a"}
    portal = Portal(app_of(repo / "examples"))
    html = portal.post("/models/yaml", {"yaml": text_of(obj), "route_gateway": GATEWAY})
    shown = pre_text(html.get_data(as_text=True), "models-verdict-text")
    written = repo / "examples" / "team-a" / "elsewhere.yaml"
    written.parent.mkdir()
    written.write_text(text_of(obj))
    assert cli("validate", str(written)) == (1, shown + "0 allowed, 1 denied\n")
    assert shown == (
        "team-a/elsewhere: denied\n  metadata.namespace: Forbidden: namespace team-a is not "
        f"allowed by {repo}/.runway/policy.yaml for examples/team-a/elsewhere.yaml: paths "
        "'examples/**' may define models\n"
    )
    written.unlink()
    assert outputs(portal, "patch", text_of(obj)) == DENIED


def test_a_new_repository_starts_from_the_shipped_examples_but_the_rejected(
    tmp_path: Path,
) -> None:
    html = Portal(app_of(tmp_path)).get("/models")
    groups = re.findall(r'<optgroup label="([^"]*)">', html)
    shipped = re.findall(r'<option value="example:([^"]*)"', html)
    expected = sorted(
        f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"
        for path in EXAMPLES.rglob("*.yaml")
        if path.parent.name != "rejected"
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "ModelDeployment"
    )
    assert groups == ["Shipped examples", "kaito presets"]
    assert sorted(shipped) == expected


def test_an_object_its_file_holds_already_needs_no_patch(portal: Portal) -> None:
    text = (EXAMPLES / "vllm-1gpu.yaml").read_text()
    assert outputs(portal, "patch", text) == (
        "<p>Nothing would change: the files on disk already say this.</p>"
    )


def test_a_source_file_added_or_changed_is_read_again(repo: Path) -> None:
    portal = Portal(app_of(repo / "examples"))
    assert 'value="source:team-b/later"' not in portal.get("/models")
    obj = yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text())
    obj["metadata"] = {"name": "later", "namespace": "team-b"}
    (repo / "examples" / "later.yaml").write_text(text_of(obj))
    assert (
        '<option value="source:team-b/later">team-b/later: Qwen/Qwen2.5-7B-Instruct</option>'
        in (portal.get("/models"))
    )
