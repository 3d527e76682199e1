"""The GitOps path on a real API server: a rendered tree applies strictly with zero drift, and
`runway apply` records IncompatibleUpstream on the ModelDeployment, then recovers."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from renderer.apply import folders
from renderer.yamlio import dump
from tests.cluster.build import cache_dir
from tests.conftest import EXAMPLES
from tests.support.builders import external_model_provider
from tests.support.cluster import Cluster
from tests.support.drift import missing_from
from tests.support.wait import wait_until

RENDERABLE = ("vllm-multi-gpu.yaml", "llmd-explicit.yaml", "vllm-direct-explicit.yaml")
CRDS = cache_dir(dict(os.environ)) / "crds"


@pytest.fixture
def rendered(
    tmp_path: Path, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> Iterator[Path]:
    sources = tmp_path / "sources"
    sources.mkdir()
    for name in RENDERABLE:
        shutil.copy(EXAMPLES / name, sources / name)
    (sources / "emp.yaml").write_text(dump(external_model_provider("openai", "models")))
    assert render(sources, tmp_path / "repo", "--commit") == 0
    capsys.readouterr()
    cluster.kubectl("create", "namespace", "models", check=False)
    cluster.kubectl("label", "namespace", "models", "runway.test/webhook=enabled", "--overwrite")
    yield tmp_path / "repo" / "rendered"
    cluster.kubectl(
        "delete",
        "-k",
        str(tmp_path / "repo" / "rendered"),
        "--ignore-not-found",
        "--wait=false",
        check=False,
    )


def refuses_field(cluster: Cluster, path: Path, field: str) -> bool:
    """Whether the served schema refuses `field` in the object at `path` (a dry run; conflicts
    with a previous test's field managers are forced, so only the schema can refuse)."""
    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--validate=strict",
        "--dry-run=server",
        "-f",
        str(path),
        check=False,
    )
    if done.returncode == 0:
        return False
    assert (
        f"{field}: field not declared in schema" in done.stderr
        or f'unknown field "{field}"' in done.stderr
    ), done.stderr
    return True


def render(sources: Path, repo: Path, *extra: str) -> int:
    argv = [
        "render",
        str(sources),
        "--repo",
        str(repo),
        "--crds",
        str(CRDS),
        "--gateway",
        "gateways/inference",
        "--istio",
    ]
    return main([*argv, *extra])


def live(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    kind = f"{obj['kind'].lower()}.{obj['apiVersion'].split('/')[0] if '/' in obj['apiVersion'] else ''}".rstrip(
        "."
    )
    found: dict[str, Any] = json.loads(
        cluster.kubectl(
            "get",
            f"{kind}/{obj['metadata']['name']}",
            "-n",
            obj["metadata"]["namespace"],
            "-o",
            "json",
        ).stdout
    )
    return found


def test_rendered_tree_applies_strictly_with_zero_drift(
    rendered: Path, cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--validate=strict",
        "--field-manager=argocd-controller",
        "-k",
        str(rendered),
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    written = [obj for _, objects in folders(rendered) for obj in objects]
    assert len(written) == 18  # 3 ModelDeployments, 5 workload objects, 9 gateway objects, 1 EMP
    drift = {
        f"{o['kind']}/{o['metadata']['name']}": missing_from(o, live(cluster, o), "")
        for o in written
    }
    assert drift == {name: [] for name in drift}
    repo = rendered.parent
    assert render(repo.parent / "sources", repo, "--commit", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["commit"] is None


def test_runway_apply_records_incompatible_upstream_and_recovers(
    rendered: Path, cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (current,) = CRDS.rglob("ray.io_rayservices.yaml")
    crd = yaml.safe_load(current.read_text())
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop(
            "serveConfigV2"
        )
    older = tmp_path / "older-rayservice.yaml"
    older.write_text(yaml.safe_dump(crd))
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=runway-tests",
        "-f",
        str(older),
    )
    service = next(rendered.rglob("rayservice-*.yaml"))
    # A CRD's new schema is served a moment after the write: wait until the field is refused.
    wait_until(
        lambda: refuses_field(cluster, service, "spec.serveConfigV2"),
        timeout=30,
        what="the older schema",
    )
    try:
        code = main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)])
        report = capsys.readouterr().out
        failed = live(
            cluster,
            {
                "apiVersion": "airunway.ai/v1alpha1",
                "kind": "ModelDeployment",
                "metadata": {"name": "llama-70b", "namespace": "models"},
            },
        )
    finally:
        cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=runway-tests",
            "-f",
            str(current),
        )
        cluster.wait_established(["rayservices.ray.io"])
        wait_until(
            lambda: not refuses_field(cluster, service, "spec.serveConfigV2"),
            timeout=30,
            what="the current schema",
        )
    code_after = main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)])
    capsys.readouterr()
    recovered = live(
        cluster,
        {
            "apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment",
            "metadata": {"name": "llama-70b", "namespace": "models"},
        },
    )

    assert code == 1
    assert "models/llama-70b: RayService/llama-70b: refused: " in report
    # Server-side apply of a custom resource fails in typed conversion, like a built-in type.
    assert ".spec.serveConfigV2: field not declared in schema" in report
    assert failed["status"]["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"]) for c in failed["status"]["conditions"]] == [
        ("ResourceCreated", "False", "IncompatibleUpstream"),
        ("Ready", "False", "IncompatibleUpstream"),
    ]
    assert (
        failed["status"]["message"]
        == "RayService/llama-70b: the installed upstream does not declare field spec.serveConfigV2; upgrade the upstream or Runway's pin"
    )
    assert code_after == 0
    assert recovered["status"]["phase"] == "Deploying"
    assert [(c["type"], c["status"]) for c in recovered["status"]["conditions"]] == [
        ("ResourceCreated", "True")
    ]


@pytest.mark.parametrize(
    ("name", "namespace", "count"), [("argocd", "argocd", 3), ("flux", "flux-system", 2)]
)
def test_gitops_entry_points_pass_strict_server_side_dry_run(
    name: str, namespace: str, count: int, cluster: Cluster
) -> None:
    cluster.kubectl("create", "namespace", namespace, check=False)

    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--validate=strict",
        "--dry-run=server",
        "-k",
        str(Path(__file__).parents[2] / "kustomize" / name),
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert len(done.stdout.splitlines()) == count


def test_render_can_take_the_upstream_schemas_from_the_cluster(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "render",
        str(EXAMPLES / "vllm-multi-gpu.yaml"),
        "--repo",
        str(tmp_path / "repo"),
        "--crds-from-cluster",
    ]

    code = main([*argv, "--kubeconfig", str(cluster.kubeconfig), "-o", "json"])
    report = json.loads(capsys.readouterr().out)

    assert code == 0
    assert [(r["name"], r["provider"], r["rendered"]) for r in report["results"]] == [
        ("llama-70b", "kuberay", True)
    ]
