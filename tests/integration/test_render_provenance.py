"""Where a render came from (issue #45, Provenance), in real Git repositories: a render commit's
trailers name the sources' repository, their commit (and whether they had uncommitted changes)
and the command, credentials redacted; none when the sources are not all in one repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from renderer.git import commits
from renderer.git.commits import BULK
from renderer.git.provenance import Provenance
from renderer.git.runner import Repo
from tests.support.gitrepo import write_tree
from tests.support.paths import EXAMPLES

SOURCE = "vllm-direct-explicit.yaml"  # Direct vLLM: a Deployment and a Service
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
REMOTE = f"https://ci-bot:{TOKEN}@git.example.com/platform/models.git"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> int:
    """`runway ARGV` in process, as the runway script starts it (sys.argv its command)."""
    monkeypatch.setattr(sys, "argv", ["runway", *argv])
    code = main(list(argv), env={})
    capsys.readouterr()
    return code


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Git repository of ModelDeployments (models/phi.yaml), committed, whose remote `origin`
    has a token in its URL."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    work = tmp_path / "dry"
    (work / "models").mkdir(parents=True)
    shutil.copy(EXAMPLES / SOURCE, work / "models" / "phi.yaml")
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.name", "dev")
    git(work, "config", "user.email", "dev@example.com")
    git(work, "remote", "add", "origin", REMOTE)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "models")
    return work


def trailers(repo: Path) -> list[str]:
    """HEAD's trailers, as git parses them."""
    return git(repo, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()


def test_a_render_commit_names_the_source_repository_commit_and_command(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "gitops"
    models = str(sources / "models")
    push_url = f"https://x:{TOKEN}@git.example.com/gitops.git"  # a credential among the words
    argv = ["render", models, "--repo", str(out), "--commit", "--author-name", push_url]
    argv += ["--author-email", "ci@example.com"]
    dry = git(sources, "rev-parse", "HEAD").strip()

    assert run(monkeypatch, capsys, *argv) == 0

    command = (
        f'["runway", "render", "{models}", "--repo", "{out}", "--commit", "--author-name", '
        '"https://<redacted>@git.example.com/gitops.git", "--author-email", "ci@example.com"]'
    )
    assert trailers(out) == [
        "Runway-Source-Repository: https://git.example.com/platform/models.git",
        f"Runway-Source-Commit: {dry}",
        "Runway-Source-Dirty: false",
        f"Runway-Command: {command}",
    ]
    assert TOKEN not in git(out, "log", "--format=%B")


def test_uncommitted_sources_are_recorded_as_dirty(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "gitops"
    (sources / "notes.txt").write_text("outside the sources given: not counted\n")
    assert (
        run(monkeypatch, capsys, "render", str(sources / "models"), "--repo", str(out), "--commit")
        == 0
    )
    assert "Runway-Source-Dirty: false" in trailers(out)

    phi = sources / "models" / "phi.yaml"
    phi.write_text(phi.read_text().replace('max-num-seqs: "64"', 'max-num-seqs: "128"'))
    assert (
        run(monkeypatch, capsys, "render", str(sources / "models"), "--repo", str(out), "--commit")
        == 0
    )
    assert "Runway-Source-Dirty: true" in trailers(out)


def test_sources_not_all_in_one_repository_record_no_source_commit(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One source outside the repository: no commit names all of them, so none is recorded."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(EXAMPLES / "cpu-llamacpp.yaml", outside / "other.yaml")
    out = tmp_path / "gitops"
    argv = ["render", str(sources / "models"), str(outside / "other.yaml"), "--repo", str(out)]

    assert run(monkeypatch, capsys, *argv, "--commit") == 0

    assert [line.split(":", 1)[0] for line in trailers(out)] == ["Runway-Command"]


@pytest.mark.parametrize("written", [1, BULK], ids=["git-commit", "fast-import"])
def test_every_way_of_committing_ends_the_message_with_the_trailers(
    tmp_path: Path, written: int
) -> None:
    """`git commit` and the bulk commit (git fast-import) carry the same trailers."""
    repo = Repo.open_or_init(tmp_path / "gitops")
    write_tree(repo, "rendered", {"ns/m/kustomization.yaml": "resources: []\n"}, {})
    said = Provenance(("runway", "render", "x\nRunway-Source-Commit: forged"), None, "a" * 40)

    commits.commit(repo, "rendered", written, trailers=said.trailers())

    assert git(repo.work, "log", "-1", "--format=%B") == (
        "runway render: 1 added, 0 changed, 0 removed\n\n"
        "A ns/m/kustomization.yaml\n\n"
        f"Runway-Source-Commit: {'a' * 40}\n"
        "Runway-Source-Dirty: false\n"
        'Runway-Command: ["runway", "render", "x\\nRunway-Source-Commit: forged"]\n'
        "\n"  # git log's own end of the message
    )
    assert trailers(repo.work) == [
        f"Runway-Source-Commit: {'a' * 40}",
        "Runway-Source-Dirty: false",
        'Runway-Command: ["runway", "render", "x\\nRunway-Source-Commit: forged"]',
    ]


def answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["runway", *argv])
    code = main(list(argv), env={})
    return code, capsys.readouterr().out


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


RENDERED = [
    "models/phi-direct: rendered: vllm on vllm, 4 files",
    "schema apps/v1 Deployment: Kubernetes 1.37 (kubernetes-validate)",
    "schema v1 Service: Kubernetes 1.37 (kubernetes-validate)",
]
UP_TO_DATE = (
    "1 rendered (1 unchanged since the last render), 0 failed; files: 0 added, 0 changed, 0 removed"
)


def test_check_says_the_tree_came_from_another_source_commit(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A source commit that changes nothing rendered: the tree is up to date (exit 0, as ever),
    and --check says which source commit it came from, in text and in JSON."""
    out, models = tmp_path / "gitops", str(sources / "models")
    first = git(sources, "rev-parse", "HEAD").strip()
    assert answer(monkeypatch, capsys, "render", models, "--repo", str(out), "--commit")[0] == 0
    assert answer(monkeypatch, capsys, "render", models, "--repo", str(out), "--check") == (
        0,
        "\n".join([*RENDERED, UP_TO_DATE]) + "\n",
    )
    (sources / "README.md").write_text("the models\n")
    second = commit_all(sources, "a readme")

    code, text = answer(monkeypatch, capsys, "render", models, "--repo", str(out), "--check")
    assert (code, text.splitlines()) == (
        0,
        [*RENDERED, f"sources: at commit {second}; the tree was rendered from {first}", UP_TO_DATE],
    )
    code, text = answer(
        monkeypatch, capsys, "render", models, "--repo", str(out), "--check", "-o", "json"
    )
    assert code == 0
    assert json.loads(text)["source"] == {
        "commit": second,
        "differs": True,
        "dirty": False,
        "rendered_from": first,
    }


def test_in_one_repository_the_render_commits_do_not_count_as_another_source_commit(
    sources: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sources and output in one repository: HEAD is the render's own commit, which changed
    only the output folder; a later edit of a source is another source commit."""
    argv = ["render", "models", "--repo", ".", "--path", "rendered"]
    monkeypatch.chdir(sources)
    first = git(sources, "rev-parse", "HEAD").strip()
    assert answer(monkeypatch, capsys, *argv, "--commit")[0] == 0

    code, text = answer(monkeypatch, capsys, *argv, "--check", "-o", "json")
    assert (code, json.loads(text)["source"]) == (
        0,
        {
            "commit": git(sources, "rev-parse", "HEAD").strip(),
            "differs": False,
            "dirty": False,
            "rendered_from": first,
        },
    )

    phi = sources / "models" / "phi.yaml"
    phi.write_text(phi.read_text().replace("phi-direct", "phi-other"))
    second = commit_all(sources, "another model")
    code, text = answer(monkeypatch, capsys, *argv, "--check")
    assert code == 1
    assert f"sources: at commit {second}; the tree was rendered from {first}" in text.splitlines()


def test_check_of_a_tree_no_render_commit_names_says_nothing_of_it(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Rendered but never committed (or by a Runway before provenance): no source commit to
    compare with."""
    out, models = tmp_path / "gitops", str(sources / "models")
    assert answer(monkeypatch, capsys, "render", models, "--repo", str(out))[0] == 0
    git(out, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "add", "-A")
    git(out, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "by hand")

    code, text = answer(
        monkeypatch, capsys, "render", models, "--repo", str(out), "--check", "-o", "json"
    )
    assert (code, json.loads(text)["source"]) == (
        0,
        {
            "commit": git(sources, "rev-parse", "HEAD").strip(),
            "differs": False,
            "dirty": False,
            "rendered_from": None,
        },
    )


def test_each_folder_says_where_it_came_from_and_only_changes_with_the_folder(
    sources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """runway.metadata in each ModelDeployment's folder: the hydrator's facts, no credential,
    listed by no kustomization; rewritten only when the folder's other files change, so a
    source commit that changes nothing in a model (even with --full) leaves it as it was."""
    shutil.copy(EXAMPLES / "cpu-llamacpp.yaml", sources / "models" / "llama.yaml")
    first = commit_all(sources, "llama")
    out, models = tmp_path / "gitops", str(sources / "models")
    argv = ["render", models, "--repo", str(out), "--commit"]
    assert run(monkeypatch, capsys, *argv) == 0
    rendered = out / "rendered" / "models"
    metadata = {
        name: (rendered / name / "runway.metadata").read_text()
        for name in ("llama-cpu", "phi-direct")
    }
    words = ",\n".join(f'    "{word}"' for word in ["runway", *argv])
    said = (
        '{\n  "command": [\n' + words + '\n  ],\n  "dirty": false,\n'
        f'  "drySha": "{first}",\n  "repoURL": "https://git.example.com/platform/models.git"\n}}\n'
    )
    assert metadata == {"llama-cpu": said, "phi-direct": said}
    assert "runway.metadata" not in (rendered / "phi-direct" / "kustomization.yaml").read_text()
    assert not [p for p in out.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    head = git(out, "rev-parse", "HEAD")

    (sources / "README.md").write_text("the models\n")
    commit_all(sources, "a readme")
    assert run(monkeypatch, capsys, *argv) == 0
    assert run(monkeypatch, capsys, *argv, "--full") == 0
    assert git(out, "rev-parse", "HEAD") == head  # nothing changed: no commit

    phi = sources / "models" / "phi.yaml"
    phi.write_text(phi.read_text().replace('max-num-seqs: "64"', 'max-num-seqs: "128"'))
    third = commit_all(sources, "phi")
    check = ["render", models, "--repo", str(out), "--check", "-o", "json"]
    code, text = answer(monkeypatch, capsys, *check)  # what it will say is the render's to say
    assert (code, json.loads(text)["changes"]["changed"]) == (
        1,
        [
            "rendered/models/phi-direct/deployment-phi-direct.yaml",
            "rendered/models/phi-direct/modeldeployment.yaml",
        ],
    )
    assert run(monkeypatch, capsys, *argv, "--full") == 0
    assert git(out, "show", "--format=", "--name-only", "HEAD").splitlines() == [
        "rendered/models/phi-direct/deployment-phi-direct.yaml",
        "rendered/models/phi-direct/modeldeployment.yaml",
        "rendered/models/phi-direct/runway.metadata",
    ]
    assert (rendered / "llama-cpu" / "runway.metadata").read_text() == said
    now = (rendered / "phi-direct" / "runway.metadata").read_text()
    assert now == said.replace(first, third).replace(words, words + ',\n    "--full"')
