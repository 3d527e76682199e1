"""A rejected push is retried without touching the user's work outside rendered/, and the report
names the commit the remote holds (issue #40, items 4 and 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.render_world import Dirt, git, models, push_retry_problems, render

NAMES = st.sampled_from(["notes2.md", "docs/a.txt", "x", "src/z.yaml", "ü.txt", "rendered.txt"])
TEXTS = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=40)


@pytest.mark.parametrize("remote_outside", [False, True], ids=["remote-rendered", "remote-file"])
def test_a_push_retry_keeps_the_users_work_and_reports_the_pushed_commit(
    tmp_path: Path, remote_outside: bool
) -> None:
    dirt = Dirt(
        edited={"docs/guide.md": "the user's edit\n"},
        staged={"new-file.txt": "staged, never committed\n"},
        untracked={"scratch.txt": "untracked\n"},
    )

    assert push_retry_problems(tmp_path, dirt, remote_outside=remote_outside) == []


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edited=st.dictionaries(NAMES, TEXTS, max_size=2),
    staged=st.dictionaries(NAMES, TEXTS, max_size=2),
    untracked=st.dictionaries(NAMES, TEXTS, max_size=2),
    remote_outside=st.booleans(),
)
def test_no_push_retry_changes_anything_outside_the_output_folder(
    tmp_path_factory: pytest.TempPathFactory,
    edited: dict[str, str],
    staged: dict[str, str],
    untracked: dict[str, str],
    remote_outside: bool,
) -> None:
    staged = {k: v for k, v in staged.items() if k not in edited}
    untracked = {k: v for k, v in untracked.items() if k not in edited and k not in staged}
    dirt = Dirt(edited, staged, untracked)

    problems = push_retry_problems(
        tmp_path_factory.mktemp("retry"), dirt, remote_outside=remote_outside
    )

    assert problems == []


def test_a_retry_that_finds_its_output_on_the_remote_reports_the_remote_head(
    tmp_path: Path,
) -> None:
    sources, remote = tmp_path / "src", tmp_path / "remote.git"
    models(sources / "a.yaml", [("models", "a")])
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    first, second = tmp_path / "first", tmp_path / "second"
    for clone in (first, second):
        clone.mkdir()
        git(clone, "init", "-q", "-b", "main")
        git(clone, "remote", "add", "origin", str(remote))
    render(str(sources), "--repo", str(first), "--push", "origin")

    code, report = render(str(sources), "--repo", str(second), "--push", "origin")

    head = git(remote, "rev-parse", "main").strip()
    assert (code, report["commit"]) == (0, head)
    assert git(second, "rev-parse", "HEAD").strip() == head


@pytest.mark.parametrize("remote_outside", [False, True], ids=["remote-rendered", "remote-file"])
def test_a_push_retry_reports_the_commit_the_remote_holds(
    tmp_path: Path, remote_outside: bool
) -> None:
    problems = push_retry_problems(tmp_path, Dirt({}, {}, {}), remote_outside=remote_outside)

    assert problems == []
