"""The GitOps path on a real API server: every example, rendered against the schema pack, applies
strictly through the registered webhook with zero drift, and `runway apply` records
IncompatibleUpstream on the ModelDeployment when an older CRD lacks a field, then recovers."""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from kubeio.yamlio import dump
from renderer.apply import folders
from renderer.output.schemapack import load_pack
from tests.support.builders import external_model_provider
from tests.support.cluster import Cluster
from tests.support.drift import missing_from
from tests.support.gitops_tier import refuses_field
from tests.support.paths import EXAMPLES
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

ADMITTED = sorted(p.name for p in EXAMPLES.glob("*.yaml"))  # examples/rejected/ are not rendered


@pytest.fixture
def rendered(
    tmp_path: Path, cluster: Cluster, registered: Webhook, capsys: pytest.CaptureFixture[str]
) -> Iterator[Path]:
    sources = tmp_path / "sources"
    sources.mkdir()
    for name in ADMITTED:
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


def render(sources: Path, repo: Path, *extra: str) -> int:
    argv = [
        "render",
        str(sources),
        "--repo",
        str(repo),
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
            # a picker's metrics-auth ClusterRole and ClusterRoleBinding have no namespace
            *(["-n", obj["metadata"]["namespace"]] if "namespace" in obj["metadata"] else []),
            "-o",
            "json",
        ).stdout
    )
    return found


def test_rendered_tree_applies_strictly_with_zero_drift(
    rendered: Path, cluster: Cluster, registered: Webhook, capsys: pytest.CaptureFixture[str]
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

    assert (done.returncode, done.stderr) == (
        0,
        "Warning: spec.engine.args.pipeline-parallel-size: each replica spans 2 nodes: the Dynamo "
        "operator places a multinode service through Grove or LeaderWorkerSet, which the "
        "dynamo-platform chart must have enabled (its defaults leave both off)\n"
        "Warning: spec.model.servedName is ignored when spec.model.source is custom\n",
    )  # the webhook's warnings for examples/dynamo-multinode.yaml and examples/cpu-llamacpp.yaml
    written = [obj for _, objects in folders(rendered) for obj in objects]
    kinds = sorted({o["kind"] for o in written})
    assert (len(written), kinds) == (
        61,  # 16 ModelDeployments, 1 EMP, and their workload and gateway objects
        [
            "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "DestinationRule", "DynamoGraphDeployment", "ExternalModelProvider", "HTTPRoute",
            "InferencePool", "LeaderWorkerSet", "ModelDeployment", "PersistentVolumeClaim", "RayService", "Role", "RoleBinding", "Service",
            "ServiceAccount", "Workspace",
        ],
    )  # fmt: skip
    drift = {
        f"{o['kind']}/{o['metadata']['name']}": missing_from(o, live(cluster, o), "")
        for o in written
    }
    assert drift == {name: [] for name in drift}
    # Through the registered webhook, which had nothing to add to hydrated objects.
    admissions = re.findall(
        r"kind=ModelDeployment op=\w+ obj=models/(\S+) allowed=(\w+) patch=(\w+)",
        registered.log_text(),
    )
    names = sorted(o["metadata"]["name"] for o in written if o["kind"] == "ModelDeployment")
    assert sorted(set(admissions)) == [(name, "True", "False") for name in names]
    repo = rendered.parent
    assert render(repo.parent / "sources", repo, "--commit", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["commit"] is None


def narrower(crd: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """An older upstream, as it were: the pack's CRD without the field at `path` ("*": the value
    schema of a map) in every version."""
    older = copy.deepcopy(crd)
    for version in older["spec"]["versions"]:
        node = version["schema"]["openAPIV3Schema"]
        for key in path[:-1]:
            node = node["additionalProperties"] if key == "*" else node["properties"][key]
        del node["properties"][path[-1]]
    return older


@pytest.mark.parametrize(
    ("kind", "path", "name", "field"),
    [
        ("RayService", ("spec", "serveConfigV2"), "llama-70b", "spec.serveConfigV2"),
        ("Workspace", ("inference", "preset"), "phi-kaito", "inference.preset"),
        (
            "DynamoGraphDeployment",
            ("spec", "backendFramework"),
            "qwen-7b",
            "spec.backendFramework",
        ),
    ],
    ids=["kuberay", "kaito", "dynamo"],
)
def test_runway_apply_records_incompatible_upstream_and_recovers(
    kind: str,
    path: tuple[str, ...],
    name: str,
    field: str,
    rendered: Path,
    cluster: Cluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (entry,) = [e for e in load_pack() if e.crd["spec"]["names"]["kind"] == kind]
    current, older = tmp_path / "current-crd.yaml", tmp_path / "older-crd.yaml"
    current.write_text(dump(entry.crd))
    older.write_text(dump(narrower(dict(entry.crd), path)))
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=runway-tests",
        "-f",
        str(older),
    )
    written = rendered / "models" / name / f"{kind.lower()}-{name}.yaml"
    # A CRD's new schema is served a moment after the write: wait until the field is refused.
    wait_until(lambda: refuses_field(cluster, written, field), timeout=30, what="the older schema")
    model = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "models"},
    }
    try:
        code = main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)])
        report = capsys.readouterr().out
        failed = live(cluster, model)
    finally:
        cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=runway-tests",
            "-f",
            str(current),
        )
        cluster.wait_established([entry.crd["metadata"]["name"]])
        wait_until(
            lambda: not refuses_field(cluster, written, field),
            timeout=30,
            what="the current schema",
        )
    code_after = main(["apply", str(rendered), "--kubeconfig", str(cluster.kubeconfig)])
    capsys.readouterr()
    recovered = live(cluster, model)

    assert code == 1
    assert f"models/{name}: {kind}/{name}: refused: " in report
    # Server-side apply of a custom resource fails in typed conversion, like a built-in type.
    assert f".{field}: field not declared in schema" in report
    assert failed["status"]["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"]) for c in failed["status"]["conditions"]] == [
        ("ResourceCreated", "False", "IncompatibleUpstream"),
        ("Ready", "False", "IncompatibleUpstream"),
        ("Stalled", "True", "IncompatibleUpstream"),  # kstatus: Failed
    ]
    assert (
        failed["status"]["message"]
        == f"{kind}/{name}: the installed upstream does not declare field {field}; upgrade the upstream or Runway's pin"
    )
    assert code_after == 0
    assert recovered["status"]["phase"] == "Deploying"
    assert [(c["type"], c["status"]) for c in recovered["status"]["conditions"]] == [
        ("ResourceCreated", "True"),
        ("Reconciling", "True"),  # kstatus: InProgress until the status controller says Running
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

    server = json.loads(cluster.kubectl("config", "view", "--minify", "-o", "json").stdout)
    assert code == 0
    assert [(r["name"], r["provider"], r["rendered"]) for r in report["results"]] == [
        ("llama-70b", "kuberay", True)
    ]
    assert report["schemas"] == {
        "ray.io/v1 RayService": f"cluster {server['clusters'][0]['cluster']['server']}, CRD rayservices.ray.io"
    }
