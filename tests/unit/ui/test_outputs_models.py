"""The shared output buttons on the Models and Gateway providers pages, through Flask's test
client: which buttons POST /outputs/offer answers for each page's form, offline and with
`--actions --repo` (a site checkout whose origin is a local bare repository), what the Models
page's bundle applies, and the new branch /outputs/branch pushes for a composed model."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from flask import Flask

from renderer.output.folders import HYDRATED_FILE, METADATA_FILE
from tests.support.cluster import Cluster
from tests.support.e2e import cluster, namespace  # noqa: F401  (the real API server)
from tests.support.paths import EXAMPLES
from tests.support.ui import (
    WRITES,
    Portal,
    cli,
    element,
    live_app,
    model,
    posted,
    signed_in,
    unescaped,
)
from tests.support.users import grant_all, make_user
from ui.app import create_app
from ui.compose import text_of
from ui.pages import models
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
KINDS = [  # the hydrated object first, then render's files by name (llm-d behind the gateway)
    "ModelDeployment",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Deployment",
    "Deployment",
    "HTTPRoute",
    "InferencePool",
    "Role",
    "RoleBinding",
    "Service",
    "Service",
    "ServiceAccount",
]
GATEWAY = "gateways/inference"
NEW_FILE = "examples/team-a/new-model.yaml"
PROVIDER = """\
apiVersion: gateway.tokenfactory.mirantis.com/v1alpha1
kind: ExternalModelProvider
metadata:
  name: fresh
  namespace: team-a
spec:
  baseURL: https://api.example.com/v1
  credentialsSecretRef:
    key: apiKey
    name: example-key
  models:
  - servedName: fresh-model
"""
DOWNLOAD_AND_PATCH = (
    '<div class="output-buttons"><button type="submit" class="secondary" '
    'formaction="/outputs/download" formmethod="post">Download YAML</button>'
    '<button type="button" class="secondary" hx-post="/outputs/patch" '
    'hx-include="closest form" hx-target="#outputs-result">Show patch</button>'
)
BRANCH = (
    '<button type="button" hx-post="/outputs/branch" hx-include="closest form" '
    'hx-target="#outputs-result" hx-disabled-elt="this">Commit to a new branch</button>'
)


def git(root: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def flat(html: str) -> str:
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", html)).strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    return bare


@pytest.fixture
def site(tmp_path: Path, remote: Path) -> Path:
    """The site's checkout: a copy of examples/ committed on main and pushed to `remote`."""
    work = tmp_path / "site"
    shutil.copytree(EXAMPLES, work / "examples")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "examples")
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    return work


def app(site: Path, *, actions: bool) -> Flask:
    settings = UiSettings(
        mode=Mode.OFFLINE,
        sources=(str(site / "examples"),),
        actions=actions,
        repo=str(site) if actions else "",
        secret_key=KEY,
    )
    return create_app(settings)


def new_model() -> str:
    obj = yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text())
    obj["metadata"] = {"name": "new-model", "namespace": "team-a"}
    obj["spec"] |= {"provider": {"name": "llmd"}, "gateway": {"enabled": True}}
    return text_of(obj)


def models_form() -> dict[str, str]:
    """What the Models page's form posts: the outputs' source first, then its own fields."""
    return {"outputs_source": "models", "yaml": new_model(), "route_gateway": GATEWAY}


def gateway_form() -> dict[str, str]:
    return {"outputs_source": "gateway", "yaml": PROVIDER}


@pytest.mark.parametrize(
    ("form", "title"),
    [
        (models_form(), f"ModelDeployment team-a/new-model: {NEW_FILE}"),
        (
            gateway_form(),
            "ExternalModelProvider team-a/fresh: examples/gateway/team-a/fresh.yaml",
        ),
    ],
    ids=["models", "gateway"],
)
@pytest.mark.parametrize("actions", [False, True], ids=["offline", "actions-repo"])
def test_the_offer_is_download_and_patch_plus_a_branch_when_the_site_has_a_repo(
    site: Path, form: dict[str, str], title: str, actions: bool
) -> None:
    portal = Portal(app(site, actions=actions))
    offered = portal.post("/outputs/offer", form)
    assert offered.status_code == 200
    assert flat(offered.get_data(as_text=True)) == (
        f"<p>{title}</p>{DOWNLOAD_AND_PATCH}{BRANCH if actions else ''}</div>"
    )


@pytest.mark.parametrize(
    ("form", "reason"),
    [
        (
            models_form() | {"yaml": new_model().replace("name: llmd", "name: nobody")},
            "admission denies this object (see the verdict): nothing is delivered",
        ),
        (
            models_form() | {"route_gateway": "no-slash"},
            "render refuses this object (see the previews): the Gateway routes attach to: "
            "expected NAMESPACE/NAME, got &#39;no-slash&#39;",
        ),
        (
            gateway_form() | {"yaml": PROVIDER.replace("fresh-model", "gpt-4o")},
            "not delivered: admission refuses the object or a served name is ambiguous "
            "(see the checks)",
        ),
    ],
    ids=["models-denied", "models-bad-gateway", "gateway-ambiguous"],
)
def test_no_button_is_offered_for_what_cannot_be_delivered(
    site: Path, form: dict[str, str], reason: str
) -> None:
    portal = Portal(app(site, actions=True))
    offered = portal.post("/outputs/offer", form).get_data(as_text=True)
    assert flat(offered) == f'<p class="error" role="alert">Nothing to deliver yet: {reason}</p>'


def test_apply_takes_the_hydrated_model_then_what_render_writes_for_it(
    site: Path, tmp_path: Path
) -> None:
    made_with = app(site, actions=False)
    with made_with.test_request_context():
        made = models.bundle(models_form())
    written = site / NEW_FILE
    written.parent.mkdir()
    written.write_text(new_model())
    out = tmp_path / "gitops"
    status, said = cli("render", str(written), "--repo", str(out), "--gateway", GATEWAY)
    assert status == 0, said
    folder = out / "rendered" / "team-a" / "new-model"
    upstream = (
        p
        for p in folder.iterdir()
        if p.name not in (HYDRATED_FILE, "kustomization.yaml", METADATA_FILE)
    )
    files = [folder / HYDRATED_FILE, *sorted(upstream)]
    rendered = [d for p in files for d in yaml.safe_load_all(p.read_text()) if d]
    assert list(made.objects) == rendered
    assert [o["kind"] for o in made.objects] == KINDS


def test_the_branch_holds_exactly_the_file_the_patch_creates(
    site: Path, remote: Path, tmp_path: Path
) -> None:
    portal = Portal(app(site, actions=True))
    patched = portal.post("/outputs/patch", models_form()).get_data(as_text=True)
    found = re.search(
        r'<pre class="patch" id="outputs-patch" tabindex="0">(.*?)</pre>', patched, re.S
    )
    assert found is not None, patched
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    (tmp_path / "new.patch").write_text(unescaped(found.group(1)))
    git(clone, "apply", str(tmp_path / "new.patch"))
    expected = (clone / NEW_FILE).read_text()

    answer = portal.post("/outputs/branch", models_form()).get_data(as_text=True)
    heads = git(remote, "for-each-ref", "--format=%(refname:lstrip=2) %(objectname)")
    branch, commit = next(h.split() for h in heads.splitlines() if h.startswith("runway-ui/"))
    assert flat(answer) == (
        '<p class="ok" role="status">Committed ModelDeployment team-a/new-model as '
        f"<code>{commit}</code> on the new branch <code>{branch}</code> of origin (made on "
        "main). </p>"
    )
    assert git(remote, "diff", "--name-status", "main", commit) == f"A\t{NEW_FILE}\n"
    assert git(remote, "show", f"{commit}:{NEW_FILE}") == expected
    assert git(site, "status", "--porcelain") == ""


# -- live: apply as the signed-in user, from the Models page's form ---------------------------


def test_live_a_user_with_rights_applies_the_composed_model_and_its_upstream_objects(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    deployer = make_user(cluster, namespace, "composer")
    grant_all(cluster, deployer, namespace, "composer-writes", ["get", "create", "patch"], WRITES)
    client = signed_in(live_app(cluster, actions=True, apply_as_user=True), deployer)
    form = {"outputs_source": "models", "yaml": text_of(model(namespace)), "route_gateway": GATEWAY}
    assert posted(client, "/outputs/offer", form) == (
        f"<p>ModelDeployment {namespace}/phi-direct: {namespace}/phi-direct.yaml</p>"
        f"{DOWNLOAD_AND_PATCH}"
        '<button type="button" hx-post="/outputs/apply" hx-include="closest form" '
        'hx-target="#outputs-result" hx-disabled-elt="this">'
        f"Apply as {deployer.username}</button></div>"
    )
    rows = "".join(
        f'<tr><td>{kind}/phi-direct</td><td class="ok">applied</td></tr>'
        for kind in ("ModelDeployment", "Deployment", "Service")
    )
    assert posted(client, "/outputs/apply", form) == (
        f'<p class="ok" role="status">Applied ModelDeployment {namespace}/phi-direct as '
        f'{deployer.username}. <a href="/deployments">Watch it on Deployments</a></p>'
        '<table><thead><tr><th scope="col">Object</th><th scope="col">Result</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


@pytest.mark.parametrize(
    ("posted", "expected"),
    [({"source": "custom"}, {"source": "custom"}), ({"source": ""}, {}), ({}, {})],
    ids=["custom", "unset", "absent"],
)
def test_the_outputs_source_field_never_reaches_the_model_source(
    site: Path, posted: dict[str, str], expected: dict[str, str]
) -> None:
    """The fragment's own field (`outputs_source`) is not the form's Model source field: the
    form's merge takes the field's own value, never the outputs' "models"."""
    obj = yaml.safe_load(new_model())
    portal = Portal(app(site, actions=False))
    data = {"yaml": new_model(), "outputs_source": "models", **posted}
    answer = portal.client.post("/models/form", data=data, headers=portal.headers)
    editor = element(answer.get_data(as_text=True), "textarea", "models-yaml")
    shown = yaml.safe_load(unescaped(editor.split(">", 1)[1].rsplit("</textarea>", 1)[0]))
    model_part = {k: v for k, v in obj["spec"]["model"].items() if k != "source"}
    assert shown["spec"]["model"] == model_part | expected
