"""Nothing lost, nobody in: what a render may remove, where it may write, what it reads.

Real `runway render` runs (in process, or as a subprocess where the old code never returned)
into real Git repositories in tmp_path.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from kubeio.yamlio import dump, dump_all
from renderer.apply import folders
from renderer.git.safefs import UnsafePath
from tests.support.builders import model_deployment
from tests.support.hostile_render import CASES, Case, laughs, outside_changes
from tests.support.paths import EXAMPLES, REJECTED_EXAMPLES

GATEWAY = ("--gateway", "gateways/inference")


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["render", *argv, *GATEWAY, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def tree(repo: Path) -> dict[str, bytes]:
    root = repo / "rendered"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def vllm(name: str, namespace: str = "models", gpu: int = 1) -> dict[str, Any]:
    return model_deployment(name, namespace, gpu=gpu, provider="vllm", engine="vllm")


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    folder = tmp_path / "examples"
    folder.mkdir()
    for path in sorted(EXAMPLES.glob("*.yaml")):
        shutil.copy(path, folder / path.name)
    return folder


def test_a_failing_render_of_one_file_leaves_every_other_model(
    examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "gitops"
    assert render(capsys, str(examples), "--repo", str(repo), "--commit")[0] == 0
    before, head = tree(repo), git(repo, "rev-parse", "HEAD")

    code, report = render(
        capsys, str(REJECTED_EXAMPLES / "disaggregated.yaml"), "--repo", str(repo), "--commit"
    )

    assert code == 1
    assert report["changes"] == {"added": [], "changed": [], "removed": []}
    assert report["removals"] == {"removed": [], "withheld": [], "reason": None, "outside": 16}
    assert tree(repo) == before
    assert git(repo, "rev-parse", "HEAD") == head  # nothing to commit


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(given_now=st.sets(st.sampled_from(["a", "b", "c"])), removed=st.sets(st.sampled_from(["a", "b", "c"])))  # fmt: skip
def test_a_render_removes_only_outputs_of_sources_removed_from_its_roots(
    given_now: set[str], removed: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule, over which files are given and which were deleted: a folder goes exactly when
    its source file is among those given (or under a folder given) and no longer defines it."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        repo, src = base / "gitops", base / "src"
        src.mkdir()
        for name in "abc":
            (src / f"{name}.yaml").write_text(dump(vllm(name)))
        assert render(capsys, str(src), "--repo", str(repo), "--commit")[0] == 0
        for name in removed:
            (src / f"{name}.yaml").write_text("")  # the file stays, its object is gone
        roots = [str(src / f"{n}.yaml") for n in sorted(given_now)] or [str(src)]

        code = main(["render", *roots, "--repo", str(repo), "--commit", "-o", "json"])
        out = capsys.readouterr().out

        asked = given_now or {"a", "b", "c"}
        gone = asked & removed
        folders = {p.split("/")[1] for p in tree(repo) if p.count("/") == 2}
        if asked - removed:
            assert code == 0
            assert folders == {"a", "b", "c"} - gone
            assert json.loads(out)["removals"]["removed"] == [f"models/{n}" for n in sorted(gone)]
        else:  # nothing left to render in what was given: unusable input, nothing touched
            assert code == 2
            assert folders == {"a", "b", "c"}


def test_a_render_with_a_failure_removes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "a.yaml").write_text(dump(vllm("a")))
    (src / "b.yaml").write_text(dump(vllm("b")))
    render(capsys, str(src), "--repo", str(repo), "--commit")
    (src / "a.yaml").unlink()
    (src / "b.yaml").write_text(dump(vllm("b", gpu=100)))  # over the ceiling: rejected

    code, report = render(capsys, str(src), "--repo", str(repo), "--commit")

    assert code == 1
    assert report["removals"] == {
        "removed": [],
        "withheld": ["models/a"],
        "reason": "the render had 1 failure: a render with a failure removes nothing",
        "outside": 0,
    }
    assert sorted(p for p in tree(repo) if p.startswith("models/a/")) == [
        "models/a/deployment-a.yaml", "models/a/kustomization.yaml",
        "models/a/modeldeployment.yaml", "models/a/runway.metadata", "models/a/service-a.yaml",
    ]  # fmt: skip


def test_removals_above_the_limit_are_withheld_until_the_flag_allows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "keep.yaml").write_text(dump(vllm("keep")))
    (src / "many.yaml").write_text(dump_all([vllm(f"m{i}") for i in range(3)]))
    render(capsys, str(src), "--repo", str(repo), "--commit")
    (src / "many.yaml").unlink()

    withheld = render(capsys, str(src), "--repo", str(repo), "--max-removals", "2", "--commit")
    allowed = render(capsys, str(src), "--repo", str(repo), "--max-removals", "3", "--commit")

    assert withheld[0] == 1
    assert withheld[1]["removals"] == {
        "removed": [],
        "withheld": ["models/m0", "models/m1", "models/m2"],
        "reason": "3 removals exceed --max-removals 2; pass --max-removals 3 to make them",
        "outside": 0,
    }
    assert allowed[0] == 0
    assert allowed[1]["removals"]["removed"] == ["models/m0", "models/m1", "models/m2"]
    assert sorted({p.split("/")[1] for p in tree(repo) if p.count("/") == 2}) == ["keep"]


def test_the_text_summary_names_the_withheld_removals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "keep.yaml").write_text(dump(vllm("keep")))
    (src / "gone.yaml").write_text(dump(vllm("gone")))
    main(["render", str(src), "--repo", str(repo)])
    (src / "gone.yaml").unlink()
    capsys.readouterr()

    code = main(["render", str(src), "--repo", str(repo), "--max-removals", "0"])

    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "not removed: 1 removals exceed --max-removals 0; pass --max-removals 1 to make them: models/gone" in lines  # fmt: skip


def test_a_key_defined_twice_is_refused_naming_both_files_and_keeps_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "one.yaml").write_text(dump(vllm("my-vllm", "ml", gpu=1)))
    render(capsys, str(src), "--repo", str(repo), "--commit")
    before = tree(repo)
    (src / "two.yaml").write_text(dump(vllm("my-vllm", "ml", gpu=2)))

    code, report = render(capsys, str(src / "two.yaml"), str(src / "one.yaml"), "--repo", str(repo), "--commit")  # fmt: skip

    assert code == 1
    assert [(r["name"], r["rendered"], r["error"]) for r in report["results"]] == [
        (
            "my-vllm",
            False,
            f"defined 2 times, in {src}/two.yaml (document 1) and {src}/one.yaml (document 1); keep one definition",
        )
    ]
    assert tree(repo) == before


def test_two_provider_configs_of_one_name_are_unusable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    config = (Path(__file__).parents[2] / "providers/vllm/config.yaml").read_text()
    (src / "a.yaml").write_text(config)
    (src / "b.yaml").write_text(config)
    (src / "md.yaml").write_text(dump(vllm("m")))

    code = main(["render", str(src), "--repo", str(tmp_path / "gitops")])

    assert code == 2
    assert capsys.readouterr().err == (
        f"runway: {src}/b.yaml (document 1): InferenceProviderConfig vllm is also defined in {src}/a.yaml (document 1)\n"
    )


@pytest.mark.parametrize(
    ("namespace", "name"),
    [("../../../../x", "my-vllm"), ("models", "../.."), ("", ""), ("models", "b" * 300)],
    ids=["namespace-traversal", "name-traversal", "empty", "300"],
)
def test_a_hostile_name_is_refused_and_the_others_are_committed(
    namespace: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "a" / "b" / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "m.yaml").write_text(dump_all([vllm(name, namespace), vllm("fine")]))

    code, report = render(capsys, str(src), "--repo", str(repo), "--commit")

    assert code == 1
    assert [r["rendered"] for r in report["results"]] == [False, True] or [
        r["rendered"] for r in report["results"]
    ] == [True, False]
    assert sorted(tree(repo)) == [
        "kustomization.yaml",
        "models/fine/deployment-fine.yaml",
        "models/fine/kustomization.yaml",
        "models/fine/modeldeployment.yaml",
        "models/fine/runway.metadata",
        "models/fine/service-fine.yaml",
        "models/kustomization.yaml",
        "runway-sources.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "src"]
    assert git(repo, "log", "--format=%s") == "runway render: 8 added, 0 changed, 0 removed\n"


def test_an_external_model_provider_named_dot_dot_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src = tmp_path / "a" / "gitops", tmp_path / "src"
    src.mkdir()
    emp = {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {"name": "../..", "namespace": "gw"},
        "spec": {
            "baseURL": "https://api.openai.com/v1",
            "credentialsSecretRef": {"name": "openai", "key": "key"},
            "models": [{"servedName": "gpt-4o"}],
        },
    }
    (src / "m.yaml").write_text(dump_all([vllm("fine"), emp]))

    code, report = render(capsys, str(src), "--repo", str(repo), "--commit")

    assert code == 1
    assert "resources:\n- models\n" in (repo / "rendered/kustomization.yaml").read_text()
    assert (repo / "rendered/kustomization.yaml").read_text().count("\n- ") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "src"]
    assert [r["rendered"] for r in report["results"]] == [False, True]


@pytest.mark.parametrize(
    "link",
    [
        "rendered",
        "rendered/models",
        "rendered/models/fine",
        "rendered/models/fine/modeldeployment.yaml",
    ],
)
def test_a_committed_link_in_the_tree_is_refused_and_its_target_untouched(
    link: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, src, target = tmp_path / "gitops", tmp_path / "src", tmp_path / "target"
    src.mkdir()
    target.mkdir()
    (target / "precious.yaml").write_text("precious: true\n")
    (src / "m.yaml").write_text(dump(vllm("fine")))
    render(capsys, str(src), "--repo", str(repo), "--commit")
    shutil.rmtree(repo / link) if (repo / link).is_dir() else (repo / link).unlink()
    (repo / link).symlink_to(target if not link.endswith(".yaml") else target / "precious.yaml")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "a link")

    code = main(["render", str(src), "--repo", str(repo), "--commit"])

    assert code == 4
    assert capsys.readouterr().err == (
        f"runway: {repo / link}: is a symbolic link or not a regular file or folder; Runway never "
        "follows or writes through links in the GitOps tree: remove it (git rm) and render again\n"
    )
    assert sorted(p.name for p in target.iterdir()) == ["precious.yaml"]
    assert (target / "precious.yaml").read_text() == "precious: true\n"


def test_a_source_link_outside_the_source_roots_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, elsewhere = tmp_path / "src", tmp_path / "elsewhere"
    src.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret.yaml").write_text(dump(vllm("other")))
    (src / "m.yaml").write_text(dump(vllm("fine")))
    (src / "linked.yaml").symlink_to(elsewhere / "secret.yaml")
    (src / "inside.yaml").symlink_to(src / "m.yaml")  # inside the roots: followed

    refused = main(["render", str(src), "--repo", str(tmp_path / "gitops")])
    err = capsys.readouterr().err
    (src / "linked.yaml").unlink()
    duplicate = main(["render", str(src), "--repo", str(tmp_path / "gitops")])

    assert refused == 2
    assert err == (
        f"runway: {src}/linked.yaml: is a symbolic link to {elsewhere}/secret.yaml, outside the "
        "source directories given; Runway does not follow it (name the target itself)\n"
    )
    assert duplicate == 1  # the link inside the roots is read: models/fine twice


def test_path_must_stay_inside_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.yaml").write_text(dump(vllm("fine")))

    # Every path lands inside tmp_path even where it is not refused (an absolute --path made
    # the old code scan that folder and remove every file in it that it did not render).
    codes = [
        main(["render", str(src), "--repo", str(tmp_path / "gitops"), "--path", path])
        for path in ("../out", str(tmp_path / "abs"), ".git", "a/../../b")
    ]

    assert codes == [2, 2, 2, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    assert capsys.readouterr().err.splitlines()[0] == (
        "runway: --path: expected a folder inside the repository, got '../out'"
    )


@pytest.mark.parametrize("check", [False, True], ids=["render", "check"])
def test_a_billion_laughs_source_is_refused(check: bool, tmp_path: Path) -> None:
    """758 bytes that expand to 10**9 values; the old code ran until killed (a subprocess,
    so that the old behaviour ends the test at its timeout instead of hanging the run)."""
    src = tmp_path / "laughs.yaml"
    src.write_text(laughs(depth=9, width=10))
    repo = tmp_path / "gitops"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)

    ran = subprocess.run(
        [sys.executable, "-m", "cli", "render", str(src), "--repo", str(repo), *(["--check"] if check else [])],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == (
        f"runway: {src}: document 1: not valid YAML at line 1, column 1: aliases expand this "
        "document past 100,000 nodes (nested aliases, a 'billion laughs'?); write the values out\n"
    )


@settings(max_examples=25, deadline=None)
@given(case=CASES)
def test_no_render_changes_anything_outside_its_repository(case: Case) -> None:
    """Hostile names (traversals, empty, absolute, 300 characters) for a ModelDeployment's
    namespace and name and an ExternalModelProvider's name, with a link planted in the tree
    (at rendered, a namespace, a folder, a file) or in the sources: after a render and a
    --check, every entry outside the repository is as it was."""
    with tempfile.TemporaryDirectory() as scratch:
        assert outside_changes(case, Path(scratch)) == []


def test_apply_refuses_a_link_in_the_tree_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runway apply` reads the rendered tree: a committed link would apply what it points to."""
    repo, src, elsewhere = tmp_path / "gitops", tmp_path / "src", tmp_path / "elsewhere"
    src.mkdir()
    (src / "m.yaml").write_text(dump(vllm("fine")))
    render(capsys, str(src), "--repo", str(repo))
    shutil.copytree(repo / "rendered/models/fine", elsewhere)
    shutil.rmtree(repo / "rendered/models/fine")
    (repo / "rendered/models/fine").symlink_to(elsewhere)

    with pytest.raises(UnsafePath) as refused:
        folders(repo / "rendered")

    assert str(refused.value) == (
        f"{repo}/rendered/models/fine: is a symbolic link or not a regular file or folder; Runway "
        "never follows or writes through links in the GitOps tree: remove it (git rm) and render again"
    )


def test_annotations_the_api_server_would_refuse_are_never_committed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An object past 256 KiB of annotations (kube-apiserver's bound) would commit a tree Argo CD
    and Flux can never apply: it is refused by field, wherever the annotations came from, and the
    rest is committed."""
    bulk = {"example.com/notes": "x" * (256 * 1024)}
    on_model = vllm("on-model")
    on_model["metadata"]["annotations"] = bulk
    on_pods = vllm("on-pods")
    on_pods["spec"]["podTemplate"] = {"metadata": {"annotations": bulk}}
    by_override = vllm("by-override")
    by_override["spec"]["provider"]["overrides"] = {
        "spec": {"template": {"metadata": {"annotations": bulk}}}
    }
    repo, src = tmp_path / "gitops", tmp_path / "src"
    src.mkdir()
    (src / "m.yaml").write_text(dump_all([on_model, on_pods, by_override, vllm("fine")]))

    code, report = render(capsys, str(src), "--repo", str(repo), "--commit")

    assert code == 1
    bound = "Too long: may hold at most 262144 bytes of keys and values together, not {}; keep bulk data out of annotations"
    assert [(r["name"], r["rendered"], r.get("error")) for r in report["results"]] == [
        ("by-override", False, "the API server would refuse: Deployment/by-override spec.template.metadata.annotations: " + bound.format(262161)),
        ("fine", True, None),
        ("on-model", False, "metadata.annotations: " + bound.format(262353)),
        ("on-pods", False, "spec.podTemplate.metadata.annotations: " + bound.format(262161)),
    ]  # fmt: skip
    assert sorted(p.parts[1] for p in map(Path, tree(repo)) if len(p.parts) > 2) == ["fine"] * 5
