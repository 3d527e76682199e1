"""An output belongs to the source file that produced it: a render of some folders never
changes or removes an output whose recorded source is a file outside them (issue #40, item 1)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from tests.support.render_world import Edits, git, models, ownership_problems, render

TEAMS = 3


@st.composite
def edits(draw: st.DrawFn) -> Edits:
    teams = range(TEAMS)
    subset = draw(st.frozensets(st.sampled_from(teams), min_size=1, max_size=TEAMS - 1))
    pairs = st.tuples(st.sampled_from(teams), st.sampled_from(teams)).filter(lambda p: p[0] != p[1])
    claims = draw(st.lists(pairs, max_size=3, unique=True))
    changes = draw(st.frozensets(st.sampled_from(teams)))
    deletes = draw(st.frozensets(st.sampled_from(teams)))
    return Edits(TEAMS, subset, tuple(claims), changes, deletes)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits())
def test_a_render_of_some_folders_never_changes_another_folders_output(
    tmp_path_factory: pytest.TempPathFactory, edits: Edits
) -> None:
    assert ownership_problems(tmp_path_factory.mktemp("own"), edits) == []


def test_the_issue_a_folder_claiming_anothers_model_is_refused_and_never_removes_it(
    tmp_path: Path,
) -> None:
    src, repo = tmp_path / "src", tmp_path / "gitops"
    models(src / "team-a" / "model.yaml", [("team-a", "own")])
    models(src / "team-b" / "model.yaml", [("team-b", "shared-model")])
    render(str(src), "--repo", str(repo), "--commit")
    held = (repo / "rendered/team-b/shared-model/deployment-shared-model.yaml").read_bytes()
    models(src / "team-a" / "zz.yaml", [("team-b", "shared-model")], gpu=2)

    code, report = render(str(src / "team-a"), "--repo", str(repo), "--commit")
    (src / "team-a" / "zz.yaml").unlink()
    again, later = render(str(src / "team-a"), "--repo", str(repo), "--commit")

    refused = [r for r in report["results"] if r["name"] == "shared-model"]
    assert code == 1
    assert [r["error"] for r in refused] == [
        f"defined in {src}/team-a/zz.yaml, but its output belongs to "
        f"{src}/team-b/model.yaml, outside the sources given; render "
        f"{src}/team-b/model.yaml to change it, or remove it there first"
    ]
    assert again == 0
    assert later["changes"] == {"added": [], "changed": [], "removed": []}
    assert (repo / "rendered/team-b/shared-model/deployment-shared-model.yaml").read_bytes() == held
    record = json.loads((repo / "rendered/runway-sources.json").read_text())["sources"]
    assert record["team-b/shared-model"] == f"{src}/team-b/model.yaml"


def test_a_folder_whose_recorded_source_is_gone_may_be_claimed(tmp_path: Path) -> None:
    src, repo = tmp_path / "src", tmp_path / "gitops"
    models(src / "team-a" / "model.yaml", [("team-a", "own")])
    models(src / "team-b" / "model.yaml", [("team-b", "shared-model")])
    render(str(src), "--repo", str(repo), "--commit")
    (src / "team-b" / "model.yaml").unlink()
    models(src / "team-a" / "zz.yaml", [("team-b", "shared-model")], gpu=2)

    code, _ = render(str(src / "team-a"), "--repo", str(repo), "--commit")

    record = json.loads((repo / "rendered/runway-sources.json").read_text())["sources"]
    assert code == 0
    assert record["team-b/shared-model"] == f"{src}/team-a/zz.yaml"


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["render", "-R", *argv])
    return code, err.getvalue()


def test_a_render_refuses_namespaces_the_source_policy_does_not_allow(tmp_path: Path) -> None:
    source, repo = tmp_path / "source", tmp_path / "gitops"
    git(tmp_path, "init", "-q", str(source))
    (source / ".runway").mkdir()
    (source / ".runway/policy.yaml").write_text(
        "kind: SourcePolicy\n"
        "rules:\n"
        "- paths: [src/team-a/**]\n  namespaces: [team-a]\n"
        "- paths: [src/team-b/**]\n  namespaces: [team-b]\n"
    )
    models(source / "src/team-a/model.yaml", [("team-a", "own")])
    models(source / "src/team-b/model.yaml", [("team-b", "shared-model")])
    first = run(str(source / "src"), "--repo", str(repo), "--commit")
    head = git(repo, "rev-parse", "HEAD")
    models(source / "src/team-a/zz.yaml", [("team-b", "shared-model")], gpu=2)

    code, said = run(str(source / "src/team-a"), "--repo", str(repo), "--commit")

    assert first == (0, "")
    assert code == 2
    assert said == (
        f"runway: .runway/policy.yaml: {source}/src/team-a/zz.yaml (document 1): namespace "
        f"team-b is not allowed by {source}/.runway/policy.yaml for src/team-a/zz.yaml: paths "
        "'src/team-a/**' may define team-a\n"
    )
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""


def test_a_malformed_source_policy_stops_the_render_with_exit_2(tmp_path: Path) -> None:
    source = tmp_path / "source"
    git(tmp_path, "init", "-q", str(source))
    (source / ".runway").mkdir()
    (source / ".runway/policy.yaml").write_text("kind: SourcePolicy\nrules: [{paths: [a]}]\n")
    models(source / "src/model.yaml", [("team-a", "own")])

    code, said = run(str(source / "src"), "--repo", str(tmp_path / "gitops"))

    assert (code, said) == (
        2,
        f"runway: {source}/.runway/policy.yaml: rules[0]: expected a mapping of exactly paths "
        "and namespaces\n",
    )


def test_the_same_file_spelled_otherwise_is_no_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, repo = tmp_path / "src", tmp_path / "gitops"
    models(src / "team-a" / "model.yaml", [("team-a", "own")])
    models(src / "team-b" / "model.yaml", [("team-b", "other")])
    render(str(src), "--repo", str(repo), "--commit")
    models(src / "team-a" / "model.yaml", [("team-a", "own")], gpu=2)
    monkeypatch.chdir(tmp_path)

    code, report = render("src/team-a", "--repo", str(repo), "--commit")

    record = json.loads((repo / "rendered/runway-sources.json").read_text())["sources"]
    assert code == 0
    assert report["changes"]["changed"] == [
        "rendered/runway-sources.json",
        "rendered/team-a/own/deployment-own.yaml",
        "rendered/team-a/own/modeldeployment.yaml",
        "rendered/team-a/own/runway.metadata",  # the command that wrote it is another
    ]
    assert record == {
        "team-a/own": "src/team-a/model.yaml",
        "team-b/other": f"{src}/team-b/model.yaml",
    }


def test_validate_denies_what_the_source_policy_refuses_render(tmp_path: Path) -> None:
    source = tmp_path / "source"
    git(tmp_path, "init", "-q", str(source))
    (source / ".runway").mkdir()
    (source / ".runway/policy.yaml").write_text(
        "kind: SourcePolicy\nrules:\n- paths: [src/team-a/**]\n  namespaces: [team-a]\n"
    )
    models(source / "src/team-a/model.yaml", [("team-a", "own"), ("team-b", "shared-model")])
    out = io.StringIO()

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["validate", str(source / "src/team-a"), "-o", "json"])

    answers = [(r["namespace"], r["allowed"], r["errors"]) for r in json.loads(out.getvalue())]
    assert code == 1
    assert answers == [
        ("team-a", True, []),
        (
            "team-b",
            False,
            [
                {
                    "field": "metadata.namespace",
                    "message": f"Forbidden: namespace team-b is not allowed by "
                    f"{source}/.runway/policy.yaml for src/team-a/model.yaml: paths "
                    "'src/team-a/**' may define team-a",
                }
            ],
        ),
    ]
