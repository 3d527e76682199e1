"""The GitOps repository at scale, in real Git: a commit of 10,000 ModelDeployments' files, the
summary message, writes of changed files only, a tree left staged by a failed commit, and the
bulk commit (git fast-import) giving exactly the commit `git add` gives."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from renderer.git import commits, disk
from renderer.git.commits import BULK, DETAIL_LIMIT, commit_message
from renderer.git.runner import Repo
from tests.support.gitrepo import write_tree

COUNT = 10_000
NAMESPACES = 20


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=300
    ).stdout


def tree(count: int) -> dict[str, str]:
    """A rendered tree's shape: three files per ModelDeployment, kustomizations per namespace."""
    files: dict[str, str] = {}
    for i in range(count):
        folder = f"team{i % NAMESPACES:02}/m{i:05}"
        files[f"{folder}/modeldeployment.yaml"] = f"kind: ModelDeployment\nname: m{i:05}\n"
        files[f"{folder}/deployment-m{i:05}.yaml"] = f"kind: Deployment\nname: m{i:05}\n"
        files[f"{folder}/kustomization.yaml"] = "resources:\n- modeldeployment.yaml\n"
    for n in range(NAMESPACES):
        files[f"team{n:02}/kustomization.yaml"] = f"namespace: team{n:02}\n"
    files["kustomization.yaml"] = "resources: []\n"
    return dict(sorted(files.items()))


def test_a_commit_of_10000_model_deployments_summarizes_per_namespace(tmp_path: Path) -> None:
    repo = Repo.open_or_init(tmp_path / "gitops")
    files = tree(COUNT)

    written = write_tree(repo, "rendered", files, {})
    head = commits.commit(repo, "rendered", len(written))  # as `render` commits it: git fast-import

    assert written == list(files)
    assert not list((repo.git_dir / "objects").glob("??/*"))  # one pack, no loose objects
    assert head == git(repo.work, "rev-parse", "HEAD").strip()
    assert git(repo.work, "ls-files", "rendered").splitlines() == [f"rendered/{p}" for p in files]
    assert git(repo.work, "log", "--format=%B").rstrip("\n") == "\n".join(
        [f"runway render: {len(files)} added, 0 changed, 0 removed", ""]
        + ["(top): 1 added, 0 changed, 0 removed"]
        + [f"team{n:02}: 1501 added, 0 changed, 0 removed" for n in range(NAMESPACES)]
    )
    assert git(repo.work, "status", "--porcelain") == ""


def test_a_small_change_writes_and_commits_only_its_files(tmp_path: Path) -> None:
    repo = Repo.open_or_init(tmp_path / "gitops")
    before = tree(300)
    write_tree(repo, "rendered", before, {})
    commits.commit(repo, "rendered")
    untouched = repo.work / "rendered/team01/m00001/deployment-m00001.yaml"
    stamp = untouched.stat().st_mtime_ns, untouched.stat().st_ino
    after = {k: v for k, v in before.items() if not k.startswith("team02/m00002/")}
    after["team00/m00000/deployment-m00000.yaml"] = "kind: Deployment\nname: changed\n"
    after["team00/m00300/modeldeployment.yaml"] = "kind: ModelDeployment\n"

    written = write_tree(repo, "rendered", after, dict(disk.scan(repo, "rendered")))
    commits.commit(repo, "rendered")

    assert written == [
        "team00/m00000/deployment-m00000.yaml",
        "team00/m00300/modeldeployment.yaml",
        "team02/m00002/deployment-m00002.yaml",
        "team02/m00002/kustomization.yaml",
        "team02/m00002/modeldeployment.yaml",
    ]
    assert (untouched.stat().st_mtime_ns, untouched.stat().st_ino) == stamp
    assert not (repo.work / "rendered/team02/m00002").exists()  # emptied folders go too
    assert git(repo.work, "log", "-1", "--format=%B") == (
        "runway render: 1 added, 1 changed, 3 removed\n\n"
        "M team00/m00000/deployment-m00000.yaml\n"
        "A team00/m00300/modeldeployment.yaml\n"
        "D team02/m00002/deployment-m00002.yaml\n"
        "D team02/m00002/kustomization.yaml\n"
        "D team02/m00002/modeldeployment.yaml\n\n"  # git log adds a blank line after %B
    )
    assert dict(disk.scan(repo, "rendered")) == dict(sorted(after.items()))


def test_a_tree_left_staged_by_a_failed_commit_is_committed_by_the_next(tmp_path: Path) -> None:
    """What an earlier Runway left after `git commit -m <huge list>` failed: all staged."""
    repo = Repo.open_or_init(tmp_path / "gitops")
    files = tree(50)
    write_tree(repo, "rendered", files, {})
    git(repo.work, "add", "-A", "rendered")

    head = commits.commit(repo, "rendered")

    assert head is not None
    assert git(repo.work, "ls-files", "rendered").splitlines() == [f"rendered/{p}" for p in files]
    assert (
        git(repo.work, "log", "--format=%s")
        == f"runway render: {len(files)} added, 0 changed, 0 removed\n"
    )
    assert commits.commit(repo, "rendered") is None  # and nothing is left to commit


def test_something_staged_outside_the_tree_is_not_committed(tmp_path: Path) -> None:
    repo = Repo.open_or_init(tmp_path / "gitops")
    (repo.work / "NOTES").write_text("a person's work in progress\n")
    git(repo.work, "add", "NOTES")
    write_tree(repo, "rendered", tree(2), {})

    commits.commit(repo, "rendered")

    assert git(repo.work, "show", "--name-only", "--format=", "HEAD").splitlines() == [
        f"rendered/{p}" for p in tree(2)
    ]
    assert git(repo.work, "diff", "--cached", "--name-only") == "NOTES\n"


def _trees(step: int) -> dict[str, str]:
    """Successive trees: files added, changed, removed, and a whole folder gone."""
    files = tree(BULK)
    for i in range(step * 97, BULK, 3):
        files[f"team{i % NAMESPACES:02}/m{i:05}/deployment-m{i:05}.yaml"] = f"step {step}\n"
    for i in range(step, BULK, 5 + step):
        files.pop(f"team{i % NAMESPACES:02}/m{i:05}/modeldeployment.yaml", None)
    return files


@pytest.mark.parametrize("staged_by_hand", [False, True])
def test_the_bulk_commit_is_the_commit_git_add_makes(tmp_path: Path, staged_by_hand: bool) -> None:
    """The same trees committed by `git add` (written=0) and by fast-import (written=BULK): the
    same trees, messages and clean index; with something staged by hand, git add is used."""
    by_add, by_import = (Repo.open_or_init(tmp_path / name) for name in ("add", "import"))
    for repo in (by_add, by_import):
        (repo.work / "NOTES").write_text("a person's notes\n")
        if staged_by_hand:
            git(repo.work, "add", "NOTES")
    for step in range(3):
        heads = []
        for repo, written in ((by_add, 0), (by_import, BULK)):
            write_tree(repo, "rendered", _trees(step), dict(disk.scan(repo, "rendered")))
            heads.append(commits.commit(repo, "rendered", written))
        assert None not in heads
        assert [git(r.work, "rev-parse", "HEAD^{tree}") for r in (by_add, by_import)] == [
            git(by_add.work, "rev-parse", "HEAD^{tree}")
        ] * 2
        assert [git(r.work, "log", "-1", "--format=%B") for r in (by_add, by_import)] == [
            git(by_add.work, "log", "-1", "--format=%B")
        ] * 2
        for repo in (by_add, by_import):
            status = git(repo.work, "status", "--porcelain")
            assert status == ("A  NOTES\n" if staged_by_hand else "?? NOTES\n")
            assert commits.commit(repo, "rendered", BULK) is None  # nothing left to commit
    loose = list((by_import.git_dir / "objects").glob("??/*"))
    assert bool(loose) == staged_by_hand  # fast-import writes packs; git add loose objects


def test_the_message_lists_files_up_to_the_limit_then_counts() -> None:
    small = [f"A\trendered/ns/m{i}/f.yaml" for i in range(DETAIL_LIMIT)]
    large = [*small, "D\trendered/other/x/f.yaml"]

    assert commit_message(small, "rendered").splitlines()[2:4] == [
        "A ns/m0/f.yaml",
        "A ns/m1/f.yaml",
    ]
    assert commit_message(large, "rendered") == (
        f"runway render: {DETAIL_LIMIT} added, 0 changed, 1 removed\n\n"
        f"ns: {DETAIL_LIMIT} added, 0 changed, 0 removed\n"
        "other: 0 added, 0 changed, 1 removed\n"
    )
