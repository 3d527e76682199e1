"""The render lock's marker (`.git/runway-render.pid`) as found: whatever stands at its name,
only the id of a process that is gone lets a render wait for the lock (renderer.git.locks); any
other content, a link, a FIFO or a large file is read as no killed render, at once and without
an error, and the marker is written as a file of its own, never through a link."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import renderer.git.locks
from renderer.git.locks import MARKER, holder_killed, locked
from renderer.git.runner import GitError, Repo


@pytest.fixture(name="repo")
def fixture_repo(tmp_path: Path) -> Repo:
    subprocess.run(["git", "init", "-q", str(tmp_path / "gitops")], check=True, timeout=60)
    return Repo(tmp_path / "gitops")


def gone_pid() -> int:
    """The id of a process that has ended and been reaped."""
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def held(repo: Repo) -> int:
    """The lock taken by another open file, as another render holds it."""
    fd = os.open(repo.git_dir / "runway.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.binary(max_size=64)
    | st.sampled_from(
        [b"-1", b"0", b"1" * 40, b"4194305", b"\x1c0", b"\x1f7\n", "\u00b2".encode(), b"\x0b9\x0c"]
    )
)
def test_a_marker_that_is_no_process_id_names_no_killed_render(repo: Repo, content: bytes) -> None:
    (repo.git_dir / MARKER).write_bytes(content)
    digits = content.strip()  # bytes: ASCII white space only; isdigit(): ASCII digits only
    plain_pid = digits.isdigit() and 0 < int(digits) <= 1 << 22
    assert holder_killed(repo) is (plain_pid and not Path(f"/proc/{int(digits)}").exists())


def test_only_a_gone_process_id_names_a_killed_render(repo: Repo) -> None:
    marker = repo.git_dir / MARKER
    marker.write_text(f"{gone_pid()}\n")
    gone = holder_killed(repo)
    marker.write_text(f"{os.getpid()}\n")
    assert (gone, holder_killed(repo)) == (True, False)


@pytest.mark.parametrize("kind", ["link-to-zero", "link-to-gone-pid", "fifo", "large", "folder"])
def test_what_is_no_plain_small_file_names_no_killed_render(
    repo: Repo, tmp_path: Path, kind: str
) -> None:
    marker = repo.git_dir / MARKER
    if kind == "link-to-zero":
        marker.symlink_to("/dev/zero")
    elif kind == "link-to-gone-pid":
        (tmp_path / "elsewhere").write_text(f"{gone_pid()}\n")
        marker.symlink_to(tmp_path / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(marker)
    elif kind == "large":
        marker.write_text(f"{gone_pid()}\n" + " " * (1 << 20))
    else:
        marker.mkdir()
    started = time.monotonic()
    assert holder_killed(repo) is False
    assert time.monotonic() - started < 1


def test_a_held_lock_is_refused_at_once_unless_its_render_is_gone(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(renderer.git.locks, "KILLED_RENDER_WAIT", 0.3)
    fd = held(repo)
    try:
        times = []
        for content in (f"{os.getpid()}\n", "not a pid\n", f"{gone_pid()}\n"):
            (repo.git_dir / MARKER).write_text(content)
            started = time.monotonic()
            busy = pytest.raises(GitError, match="another render is running in this repository")
            with busy, locked(repo):
                pass
            times.append(time.monotonic() - started)
    finally:
        os.close(fd)
    assert times[0] < 0.2 and times[1] < 0.2  # refused at once
    assert 0.3 <= times[2] < 2  # waited for the gone render's workers, then refused


def test_the_marker_is_never_written_through_a_link(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not Runway's\n")
    (repo.git_dir / MARKER).symlink_to(outside)

    with locked(repo):
        marker = repo.git_dir / MARKER
        during = (marker.is_symlink(), marker.read_text())

    assert during == (False, f"{os.getpid()}\n")
    assert outside.read_text() == "not Runway's\n"
    assert not (repo.git_dir / MARKER).exists()
