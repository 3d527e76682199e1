"""ui/outputs.py: paths stay inside the repository, and a patch is what `git apply` takes to
reach exactly the planned files (new or changed), over generated texts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ui.outputs import Bundle, OutputError, Planned, checked_path, download_text, patch_text


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def repo(tmp: Path) -> Path:
    root = tmp / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "'/etc/passwd' is not a path inside the repository"),
        ("", "'' is not a path inside the repository"),
        ("a/../../b", "'a/../../b' is not a plain path inside the repository"),
        ("a//b", "'a//b' is not a plain path inside the repository"),
        (".git/config", "'.git/config' is not a plain path inside the repository"),
        ("a\\b", "'a\\\\b' is not a path inside the repository"),
    ],
)
def test_paths_outside_the_repository_are_refused(path: str, reason: str) -> None:
    with pytest.raises(OutputError) as caught:
        checked_path(path)
    assert str(caught.value) == reason


def test_download_names_each_file() -> None:
    bundle = Bundle("t", (Planned("a/x.yaml", "a: 1\n"), Planned("b/y.yaml", "b: 2\n")))
    assert download_text(bundle) == "# a/x.yaml\na: 1\n---\n# b/y.yaml\nb: 2\n"


def test_a_link_is_not_written_through(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "x.yaml").symlink_to("/etc/hostname")
    with pytest.raises(OutputError) as caught:
        patch_text(Bundle("t", (Planned("x.yaml", "a: 1\n"),)), root)
    assert (
        str(caught.value)
        == f"{root / 'x.yaml'} is a symbolic link; the portal does not write through links"
    )


lines = st.lists(st.text(alphabet="ab: -#\t", max_size=12), max_size=8)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(old=st.one_of(st.none(), lines), new=lines, newline=st.booleans())
def test_git_apply_reaches_the_planned_text(
    tmp_path: Path, old: list[str] | None, new: list[str], newline: bool
) -> None:
    root = tmp_path / "r"
    subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir()
    git(root, "init", "-q")
    target = root / "team" / "m.yaml"
    if old is not None:
        target.parent.mkdir()
        target.write_text("\n".join(old) + "\n")
    text = "\n".join(new) + ("\n" if newline else "")
    if not text:
        text = "x: 1\n"
    diff = patch_text(Bundle("t", (Planned("team/m.yaml", text),)), root)
    if old is not None and target.read_text() == text:
        assert diff == ""
        return
    git(root, "apply", "--whitespace=nowarn", "-", stdin=diff)
    assert target.read_text() == text
