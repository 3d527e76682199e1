"""renderer.git.safefs.Folders keeps at most OPEN_FOLDERS folders open, however many it writes
into (a first render of 100,000 ModelDeployments opened 100,500 and ran out of descriptors),
and a folder it closed is opened again, still without following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from renderer.git.safefs import OPEN_FOLDERS, UnsafePath
from renderer.git.writer import TreeWriter


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_writing_into_many_folders_keeps_few_open(tmp_path: Path) -> None:
    count = OPEN_FOLDERS * 4
    before = open_descriptors()
    most = 0
    with TreeWriter(tmp_path, "rendered", tmp_path / "scratch") as writer:
        for i in range(count):
            writer.write(f"ns{i % 7}/m{i:05}/a.yaml", f"a: {i}\n")
            most = max(most, open_descriptors() - before)
        writer.write("ns0/m00000/b.yaml", "b: 0\n")  # a folder closed long ago, again
    assert most <= OPEN_FOLDERS + 1  # the folders, and one file being written
    assert open_descriptors() == before
    assert (tmp_path / "rendered/ns0/m00000/b.yaml").read_text() == "b: 0\n"
    written = sorted(
        p.relative_to(tmp_path / "rendered").as_posix() for p in tmp_path.rglob("a.yaml")
    )
    assert len(written) == count
    assert (tmp_path / "rendered/ns3/m00997/a.yaml").read_text() == "a: 997\n"


def test_a_folder_reopened_after_it_became_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with TreeWriter(tmp_path, "rendered", tmp_path / "scratch") as writer:
        writer.write("ns/first/a.yaml", "a: 1\n")
        for i in range(OPEN_FOLDERS + 2):  # `ns/first` and `ns` closed meanwhile
            writer.write(f"other/m{i:05}/a.yaml", "a: 2\n")
        (tmp_path / "rendered/ns/first/a.yaml").unlink()
        (tmp_path / "rendered/ns/first").rmdir()
        (tmp_path / "rendered/ns/first").symlink_to(outside)
        with pytest.raises(UnsafePath, match="symbolic link"):
            writer.write("ns/first/b.yaml", "b: 1\n")
    assert list(outside.iterdir()) == []
