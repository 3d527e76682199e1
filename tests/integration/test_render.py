"""`runway render` into real Git repositories: layout, determinism, stickiness, pruning, strict
upstream checks (including an older CRD), --check, pushes that race, and a killed render.

Upstream schemas come from Runway's schema pack (the default); these tests render KubeRay, llm-d
and Direct vLLM (KAITO and Dynamo are rendered by the unit and e2e tiers).
"""

from __future__ import annotations

import copy
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from core.admission.pipeline import admit
from core.selection.configs import ProviderRegistry
from kubeio.yamlio import dump, dump_all
from renderer.output.schemapack import load_pack
from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.paths import EXAMPLES, REJECTED_EXAMPLES

RENDERABLE = ("vllm-multi-gpu.yaml", "llmd-explicit.yaml", "vllm-direct-explicit.yaml")


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    for name in RENDERABLE:
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["render", *argv, "--gateway", "gateways/inference", "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def commits(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def test_render_writes_a_committed_kustomize_tree(
    sources: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    shipped: ProviderRegistry,
) -> None:
    repo = tmp_path / "gitops"

    code, report = render(capsys, str(sources), "--repo", str(repo), "--commit")

    assert code == 0
    assert [(r["name"], r["provider"], r["rendered"]) for r in report["results"]] == [
        ("llama-70b", "kuberay", True),
        ("mistral-llmd", "llmd", True),
        ("phi-direct", "vllm", True),
    ]
    files = sorted(
        str(p.relative_to(repo / "rendered")) for p in (repo / "rendered").rglob("*") if p.is_file()
    )
    assert files == [
        "kustomization.yaml",
        "models/kustomization.yaml",
        "models/llama-70b/kustomization.yaml",
        "models/llama-70b/modeldeployment.yaml",
        "models/llama-70b/rayservice-llama-70b.yaml",
        "models/llama-70b/runway.metadata",  # where it came from (renderer/git/provenance.py)
        "models/mistral-llmd/clusterrole-models.mistral-llmd-epp.yaml",
        "models/mistral-llmd/clusterrolebinding-models.mistral-llmd-epp.yaml",
        "models/mistral-llmd/configmap-mistral-llmd-epp.yaml",
        "models/mistral-llmd/deployment-mistral-llmd-epp.yaml",
        "models/mistral-llmd/deployment-mistral-llmd.yaml",
        "models/mistral-llmd/httproute-mistral-llmd.yaml",
        "models/mistral-llmd/inferencepool-mistral-llmd.yaml",
        "models/mistral-llmd/kustomization.yaml",
        "models/mistral-llmd/modeldeployment.yaml",
        "models/mistral-llmd/role-mistral-llmd-epp.yaml",
        "models/mistral-llmd/rolebinding-mistral-llmd-epp.yaml",
        "models/mistral-llmd/runway.metadata",
        "models/mistral-llmd/service-mistral-llmd-epp.yaml",
        "models/mistral-llmd/service-mistral-llmd.yaml",
        "models/mistral-llmd/serviceaccount-mistral-llmd-epp.yaml",
        "models/phi-direct/deployment-phi-direct.yaml",
        "models/phi-direct/kustomization.yaml",
        "models/phi-direct/modeldeployment.yaml",
        "models/phi-direct/runway.metadata",
        "models/phi-direct/service-phi-direct.yaml",
        "runway-sources.json",  # where each folder came from (renderer/output/ownership.py)
    ]
    hydrated = yaml.safe_load((repo / "rendered/models/llama-70b/modeldeployment.yaml").read_text())
    assert (
        hydrated
        == admit(
            yaml.safe_load((EXAMPLES / "vllm-multi-gpu.yaml").read_text()), registry=shipped
        ).obj
    )
    assert commits(repo) == ["runway render: 27 added, 0 changed, 0 removed"]
    built = subprocess.run(
        [str(Path(sys.executable).parent / "kubectl"), "kustomize", str(repo / "rendered")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert sorted(d["kind"] for d in yaml.safe_load_all(built.stdout)) == [
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Deployment", "Deployment", "HTTPRoute", "InferencePool",
        "ModelDeployment", "ModelDeployment", "ModelDeployment", "RayService", "Role", "RoleBinding",
        "Service", "Service", "Service", "ServiceAccount",
    ]  # fmt: skip


def test_rendering_again_is_byte_identical_and_commits_nothing(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "gitops"
    render(capsys, str(sources), "--repo", str(repo), "--commit")
    before = {p: p.read_bytes() for p in (repo / "rendered").rglob("*") if p.is_file()}

    code, report = render(capsys, str(sources), "--repo", str(repo), "--commit")

    assert (code, report["commit"], report["changes"]) == (
        0,
        None,
        {"added": [], "changed": [], "removed": []},
    )
    assert {p: p.read_bytes() for p in (repo / "rendered").rglob("*") if p.is_file()} == before
    assert len(commits(repo)) == 1


def test_selection_stays_sticky_when_provider_configs_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, source = tmp_path / "gitops", tmp_path / "md.yaml"
    source.write_text(dump(model_deployment("sticky", "team", gpu=2)))
    render(capsys, str(source), "--repo", str(repo), "--commit")
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "all.yaml").write_text(
        dump_all([provider_config("kuberay"), provider_config("llmd", rules=[("true", 100)])])
    )

    code, report = render(
        capsys,
        str(source),
        "--repo",
        str(repo),
        "--providers",
        str(configs),
        "--commit",
    )
    fresh_code, fresh = render(
        capsys,
        str(source),
        "--repo",
        str(tmp_path / "fresh"),
        "--providers",
        str(configs),
    )

    assert (code, report["results"][0]["provider"], report["commit"]) == (0, "kuberay", None)
    assert (fresh_code, fresh["results"][0]["provider"]) == (
        0,
        "llmd",
    )  # a new repository selects anew


def test_a_removed_model_deployment_is_pruned(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "gitops"
    render(capsys, str(sources), "--repo", str(repo), "--commit")
    (sources / "llmd-explicit.yaml").unlink()

    code, report = render(capsys, str(sources), "--repo", str(repo), "--commit")

    assert code == 0
    assert not (repo / "rendered/models/mistral-llmd").exists()
    assert report["changes"]["removed"] == [
        f"rendered/models/mistral-llmd/{name}"
        for name in (
            "clusterrole-models.mistral-llmd-epp.yaml",
            "clusterrolebinding-models.mistral-llmd-epp.yaml", "configmap-mistral-llmd-epp.yaml",
            "deployment-mistral-llmd-epp.yaml", "deployment-mistral-llmd.yaml",
            "httproute-mistral-llmd.yaml", "inferencepool-mistral-llmd.yaml", "kustomization.yaml",
            "modeldeployment.yaml", "role-mistral-llmd-epp.yaml", "rolebinding-mistral-llmd-epp.yaml",
            "runway.metadata", "service-mistral-llmd-epp.yaml", "service-mistral-llmd.yaml",
            "serviceaccount-mistral-llmd-epp.yaml",
        )
    ]  # fmt: skip
    # changed: the namespace's kustomization and the record of sources (runway-sources.json)
    assert commits(repo)[0] == "runway render: 0 added, 2 changed, 15 removed"
    assert "D models/mistral-llmd/modeldeployment.yaml" in git(repo, "log", "-1", "--format=%b")


def test_an_older_upstream_crd_lacking_an_emitted_field_names_the_field(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--crds replaces the schema pack for the kinds it holds, and only for those."""
    older = tmp_path / "older-crds"
    older.mkdir()
    (entry,) = [e for e in load_pack() if e.file == "rayservices.ray.io.json"]
    crd = copy.deepcopy(dict(entry.crd))
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop(
            "serveConfigV2"
        )
    (older / "rayservice.yaml").write_text(yaml.safe_dump(crd))
    repo = tmp_path / "gitops"

    code, report = render(
        capsys, str(sources), "--repo", str(repo), "--crds", str(older), "--commit"
    )

    by_name = {r["name"]: r for r in report["results"]}
    assert code == 1
    assert by_name["llama-70b"]["rendered"] is False
    assert by_name["llama-70b"]["error"] == (
        f"IncompatibleUpstream: spec.serveConfigV2: RayService/llama-70b (ray.io/v1, schema from "
        f"{older}/rayservice.yaml (document 1)): spec.serveConfigV2: Unknown field: not declared "
        'in the schema (did you mean "rayClusterConfig"?)'
    )
    assert not (repo / "rendered/models/llama-70b").exists()
    assert by_name["mistral-llmd"]["rendered"] and by_name["phi-direct"]["rendered"]
    kubernetes = "Kubernetes 1.37 (kubernetes-validate)"
    assert report["schemas"] == {
        "apps/v1 Deployment": kubernetes,
        "gateway.networking.k8s.io/v1 HTTPRoute": "schema pack httproutes.gateway.networking.k8s.io.json (Gateway API v1.5.1)",
        "inference.networking.k8s.io/v1 InferencePool": "schema pack inferencepools.inference.networking.k8s.io.json (Gateway API Inference Extension v1.5.0)",
        "ray.io/v1 RayService": f"{older}/rayservice.yaml (document 1)",
        "rbac.authorization.k8s.io/v1 ClusterRole": kubernetes,
        "rbac.authorization.k8s.io/v1 ClusterRoleBinding": kubernetes,
        "rbac.authorization.k8s.io/v1 Role": kubernetes,
        "rbac.authorization.k8s.io/v1 RoleBinding": kubernetes,
        "v1 ConfigMap": kubernetes,
        "v1 Service": kubernetes,
        "v1 ServiceAccount": kubernetes,
    }


def test_check_exit_status_tells_out_of_date_from_rejected(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As kubectl diff: 0 no differences, 1 differences, above 1 an error (a rejected object)."""
    repo = tmp_path / "gitops"
    render(capsys, str(sources), "--repo", str(repo), "--commit")
    up_to_date, _ = render(capsys, str(sources), "--repo", str(repo), "--check")
    (sources / "llmd-explicit.yaml").unlink()
    out_of_date, _ = render(capsys, str(sources), "--repo", str(repo), "--check")
    shutil.copy(REJECTED_EXAMPLES / "kaito-count.yaml", sources / "kaito-count.yaml")
    rejected, report = render(capsys, str(sources), "--repo", str(repo), "--check")

    assert (up_to_date, out_of_date, rejected) == (0, 1, 3)
    assert [(r["name"], r["rendered"]) for r in report["results"]] == [
        ("llama-70b", True),
        ("phi-direct", True),
        ("rejected-kaito-count", False),
    ]


def test_a_rejected_model_deployment_keeps_its_previous_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, source = tmp_path / "gitops", tmp_path / "md.yaml"
    source.write_text(dump(model_deployment("keep", "team", gpu=1, provider="vllm", engine="vllm")))
    render(capsys, str(source), "--repo", str(repo), "--commit")
    before = (repo / "rendered/team/keep/deployment-keep.yaml").read_text()
    source.write_text(
        dump(
            model_deployment(
                "keep",
                "team",
                gpu=1,
                provider="vllm",
                engine="vllm",
                overrides={"spec": {"replicas": 9}},
            )
        )
    )

    code, report = render(capsys, str(source), "--repo", str(repo), "--commit")

    assert code == 1
    assert report["results"][0]["error"].startswith(
        'spec.provider.overrides.spec.replicas: Forbidden: "replicas" may not be set'
    )
    assert (repo / "rendered/team/keep/deployment-keep.yaml").read_text() == before
    assert report["commit"] is None


def test_check_reports_an_out_of_date_tree(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "gitops"
    render(capsys, str(sources), "--repo", str(repo), "--commit")
    up_to_date = render(capsys, str(sources), "--repo", str(repo), "--check")
    (sources / "extra.yaml").write_text(
        dump(model_deployment("extra", "models", gpu=1, provider="vllm", engine="vllm"))
    )

    code, report = render(capsys, str(sources), "--repo", str(repo), "--check")

    assert up_to_date[0] == 0
    assert code == 1
    assert report["changes"]["added"] == [
        "rendered/models/extra/deployment-extra.yaml",
        "rendered/models/extra/kustomization.yaml",
        "rendered/models/extra/modeldeployment.yaml",
        "rendered/models/extra/service-extra.yaml",
    ]
    assert not (repo / "rendered/models/extra").exists()  # --check writes nothing


def test_pushes_that_race_are_resolved_without_losing_history(
    sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True, timeout=60
    )
    first, second = tmp_path / "a", tmp_path / "b"
    for clone in (first, second):
        render(capsys, str(sources), "--repo", str(clone))
        git(clone, "remote", "add", "origin", str(remote))
    other = tmp_path / "other"
    other.mkdir()
    (other / "md.yaml").write_text(
        dump(model_deployment("other", "models", gpu=1, provider="vllm", engine="vllm"))
    )

    code_a, report_a = render(capsys, str(sources), "--repo", str(first), "--push", "origin")
    code_b, report_b = render(capsys, str(other), "--repo", str(second), "--push", "origin")

    history = git(remote, "log", "--format=%s", "main").splitlines()
    assert (code_a, code_b) == (0, 0)
    assert history == [  # b renders only `other`: a's models are outside its sources, kept
        "runway render: 5 added, 2 changed, 0 removed",
        "runway render: 27 added, 0 changed, 0 removed",
    ]
    assert git(remote, "rev-parse", "main").strip() == git(second, "rev-parse", "HEAD").strip()
    assert report_a["commit"] is not None and report_b["commit"] is not None


def test_a_killed_render_leaves_the_previous_tree_and_history_intact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, many = tmp_path / "gitops", tmp_path / "many"
    many.mkdir()
    (many / "one.yaml").write_text(
        dump(model_deployment("first", "models", gpu=1, provider="vllm", engine="vllm"))
    )
    render(capsys, str(many), "--repo", str(repo), "--commit")
    head, tree = git(repo, "rev-parse", "HEAD"), git(repo, "ls-files", "-s")
    (many / "lots.yaml").write_text(
        dump_all(
            [
                model_deployment(f"m{i:03}", "models", gpu=1, provider="vllm", engine="vllm")
                for i in range(3000)
            ]
        )
    )
    runway = Path(sys.executable).parent / "runway"

    killed = []
    for delay in (0.5, 1.0, 1.5):
        proc = subprocess.Popen(
            [
                str(runway),
                "render",
                str(many),
                "--repo",
                str(repo),
                "--commit",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)  # not waiting for an event: killing at an arbitrary moment is the point
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        killed.append(proc.returncode)
        subprocess.run(
            ["git", "fsck", "--strict"], cwd=repo, check=True, capture_output=True, timeout=60
        )
        assert git(repo, "rev-parse", "HEAD") in (head, git(repo, "rev-parse", "HEAD"))

    code, report = render(capsys, str(many), "--repo", str(repo), "--commit")

    assert killed == [-signal.SIGKILL] * 3  # each kill landed while the render was running
    assert code == 0
    assert len(report["results"]) == 3001
    assert git(repo, "status", "--porcelain") == ""
    assert tree != git(repo, "ls-files", "-s")
    assert (repo / "rendered/models/first/deployment-first.yaml").exists()


def test_external_model_providers_are_rendered_and_inline_keys_never_reach_git(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, sources = tmp_path / "gitops", tmp_path / "sources"
    sources.mkdir()
    good = external_model_provider("openai", "gw")
    bad = external_model_provider("leaky", "gw", apiKey="sk-live-never-in-git")
    (sources / "emps.yaml").write_text(dump_all([good, bad]))
    (sources / "md.yaml").write_text(
        dump(model_deployment("m", "gw", gpu=1, provider="vllm", engine="vllm"))
    )

    code, report = render(capsys, str(sources), "--repo", str(repo), "--commit")

    by_name = {r["name"]: r for r in report["results"]}
    assert code == 1
    assert (by_name["openai.emp"]["rendered"], by_name["m"]["rendered"]) == (True, True)
    assert (
        by_name["leaky.emp"]["error"]
        == "spec.apiKey: Forbidden: credentials are never inline; reference a Secret key in spec.credentialsSecretRef"
    )
    # As the API server stores it: the CRD's default mode filled in (Argo CD diffs Git against it).
    stored = {**good, "spec": {**good["spec"], "models": [{"mode": "chat", "servedName": "gpt-x"}]}}
    assert (
        yaml.safe_load((repo / "rendered/gw/openai.emp/externalmodelprovider.yaml").read_text())
        == stored
    )
    assert not (repo / "rendered/gw/leaky.emp").exists()
    assert "sk-live-never-in-git" not in git(repo, "log", "-p")
