"""`render --check` and `--diff` write nothing (issue #45 item 2): a --repo that is not a Git
work tree already, a mistyped path above all, is unusable input (exit 2, one line), and nothing
is created there, where it used to become a new repository reported as all out of date (1)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from tests.support.paths import EXAMPLES

WHY = "(--check and --diff write nothing, and create no repository)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("flag", ["--check", "--diff"])
@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda repo: None, "no such repository"),
        (os.mkdir, "not a Git repository: no .git folder in it"),
        (lambda repo: Path(repo).write_text(""), "not a Git repository: no .git folder in it"),
    ],
    ids=["missing", "empty-folder", "a-file"],
)
def test_check_refuses_a_repo_that_is_not_there_and_creates_nothing(
    flag: str,
    make: Callable[[Path], object],
    problem: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "mistyped"
    make(repo)
    before = tree(tmp_path)

    answer = run(capsys, "render", str(EXAMPLES / "vllm-1gpu.yaml"), "--repo", str(repo), flag)

    assert answer == (Exit.USAGE, "", f"runway: {repo}: {problem} {WHY}\n")
    assert tree(tmp_path) == before
