"""Issue #41's acceptance on the live plane: KAITO's operator installed GitOps-first from the
Providers page. The portal runs live with `--actions --repo <a clone of the test Git server's
repository>`; a signed-in user opens the page (live: the configs are the cluster's), chooses
Flux for KAITO and clicks the shared output's "Commit to a new branch": the portal commits
`infrastructure/providers/kaito.yaml` on a new branch and pushes it, and its answer names the
branch. The test then merges that branch into the branch Flux watches (a stand-in for the
reviewer merging the pull request), and Flux (source-controller and kustomize-controller, built
by `make cluster`) applies the HelmRepository and the HelmRelease the file holds, as written.

What does not happen here, said where it matters: no helm-controller runs (its CRD is installed,
tests/cluster/flux.py) and KAITO's chart repository cannot be reached from this machine, so the
release is applied but never installed; the test asserts the objects Flux applied."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page, expect

from kubeio.shipped import bundled_config_objects
from kubeio.yamlio import dump, dump_all
from tests.support.browser import Screenshot, check_accessible
from tests.support.cluster import Cluster
from tests.support.e2e import cluster, namespace  # noqa: F401  (the e2e tier's fixtures)
from tests.support.flux import Flux, missing_controllers, start_flux
from tests.support.gitserver import GitServer, start_git_server
from tests.support.ui import UiServer
from tests.support.users import make_user
from tests.support.wait import wait_until

SYNC_TIMEOUT = 120
NAME = "ui-providers"  # the GitRepository and Kustomization of this test, in flux-system


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def flux(cluster: Cluster, tmp_path: Path) -> Iterator[Flux]:  # noqa: F811
    missing = missing_controllers()
    if missing:
        pytest.fail(f"Flux tier: {', '.join(missing)} not built; run `make cluster`")
    workdir = tmp_path / "flux"
    workdir.mkdir()
    started = start_flux(cluster, workdir)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    server = start_git_server(tmp_path / "git")
    try:
        yield server
    finally:
        server.stop()


def clone(server: GitServer, into: Path) -> Path:
    """A working tree of a new repository on the server, with a first commit pushed."""
    url = server.create("gitops")
    subprocess.run(["git", "clone", "-q", url, str(into)], check=True, timeout=30)
    git(into, "config", "user.email", "portal-test@example.com")
    git(into, "config", "user.name", "Portal test")
    (into / "README.md").write_text("GitOps source of the portal's Flux test.\n")
    git(into, "add", "README.md")
    git(into, "commit", "-q", "-m", "start")
    git(into, "push", "-q", "origin", "HEAD:main")
    return into


def sync_objects(url: str) -> str:
    return dump_all(
        [
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": NAME, "namespace": "flux-system"},
                "spec": {"interval": "10s", "url": url, "ref": {"branch": "main"}},
            },
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": NAME, "namespace": "flux-system"},
                "spec": {
                    "interval": "10s",
                    "path": "./infrastructure/providers",
                    "prune": True,
                    "sourceRef": {"kind": "GitRepository", "name": NAME},
                },
            },
        ]
    )


def applied(cluster: Cluster, kind: str, name: str) -> dict[str, Any] | None:  # noqa: F811
    done = cluster.kubectl("get", kind, name, "-n", "flux-system", "-o", "yaml", check=False)
    return yaml.safe_load(done.stdout) if done.returncode == 0 else None


def test_kaitos_operator_is_installed_by_committing_its_helmrelease(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
    flux: Flux,
    git_server: GitServer,
    tmp_path: Path,
    page: Page,
    screenshot: Screenshot,
) -> None:
    kaito = next(c for c in bundled_config_objects() if c["metadata"]["name"] == "kaito")
    had_kaito = cluster.kubectl("get", "inferenceproviderconfig", "kaito", check=False)
    cluster.apply_manifests(dump(kaito))
    repo = clone(git_server, tmp_path / "gitops")
    cluster.apply_manifests(sync_objects(f"{git_server.base_url}/gitops.git"))
    args = ["--kubeconfig", str(cluster.kubeconfig), "--actions", "--repo", str(repo)]
    try:
        installer = make_user(cluster, namespace, "installer")
        with UiServer.start(tmp_path / "ui", offline=False, args=args) as ui:
            page.set_extra_http_headers({"X-Forwarded-Access-Token": installer.token})
            page.goto(f"{ui.url}/providers")
            page.locator("#provider-kaito").get_by_role("link").click()
            install = page.locator("#install")
            expect(install.get_by_label("Provider")).to_have_value("kaito")
            install.get_by_role("radio", name="Flux").check()
            expect(install.locator("#outputs-offer p")).to_have_text(
                "Flux install of kaito: infrastructure/providers/kaito.yaml"
            )
            install.get_by_role("button", name="Commit to a new branch").click()
            said = install.locator("#outputs-result p.ok")
            expect(said).to_contain_text("on the new branch")
            commit, branch = said.locator("code").all_inner_texts()
            check_accessible(page)
            install.scroll_into_view_if_needed()
            screenshot(page, "providers-install")
        assert branch == f"runway-ui/flux-install-of-kaito-{commit[:12]}"
        git(repo, "fetch", "-q", "origin", f"{branch}:{branch}")
        assert git(repo, "diff", "--name-only", "origin/main", branch).split() == [
            "infrastructure/providers/kaito.yaml"
        ]
        trailer = git(repo, "log", "-1", "--format=%(trailers:key=Requested-by)", branch)
        assert trailer.strip() == f"Requested-by: {installer.username}"
        written = git(repo, "show", f"{branch}:infrastructure/providers/kaito.yaml")
        objects = [d for d in yaml.safe_load_all(written) if isinstance(d, dict)]
        assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
            ("HelmRepository", "kaito"),
            ("HelmRelease", "kaito-workspace"),
        ]
        # The reviewer's merge of the pull request, stood in for by the test: the portal's
        # branch (made on main's head) becomes main, the branch Flux's GitRepository watches.
        git(repo, "push", "-q", "origin", f"{branch}:main")
        for obj in objects:
            kind, name = str(obj["kind"]).lower(), str(obj["metadata"]["name"])

            def flux_applied(kind: str = kind, name: str = name) -> dict[str, Any] | None:
                return applied(cluster, kind, name)

            found = wait_until(
                flux_applied,
                timeout=SYNC_TIMEOUT,
                interval=1.0,
                what=f"Flux applies {obj['kind']} {obj['metadata']['name']}",
            )
            assert found is not None
            # as written, with the CRDs' defaults
            assert found["spec"] == with_defaults(obj)["spec"]
            assert found["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == NAME
    finally:
        cluster.kubectl(
            "delete", "kustomization,gitrepository", NAME, "-n", "flux-system", check=False
        )
        for kind, name in (("helmrelease", "kaito-workspace"), ("helmrepository", "kaito")):
            cluster.kubectl("delete", kind, name, "-n", "flux-system", check=False)
        if had_kaito.returncode != 0:
            cluster.kubectl("delete", "inferenceproviderconfig", "kaito", check=False)


def with_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as the API server stores it: with the defaults its Flux CRD declares
    (HelmRepository spec.provider, HelmRelease spec.chart.spec.reconcileStrategy)."""
    out = copy.deepcopy(obj)
    if obj["kind"] == "HelmRepository":
        out["spec"]["provider"] = "generic"
    else:
        out["spec"]["chart"]["spec"]["reconcileStrategy"] = "ChartVersion"
    return out
