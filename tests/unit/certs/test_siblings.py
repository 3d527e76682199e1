"""`runway certs issue` and `rotate` remove only what they created (issue #40 item 15): they
removed every sub-folder whose name began with `..` (`..x`, `..2026`, a copy of a bundle),
and a `ca.crt.tmp` or `..data.tmp` beside the bundle. Property test: whatever files and folders
stand beside the bundle, each is there afterwards byte for byte, and the versions the commands
wrote themselves are still cleaned up (the current one and the one before stay)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from certs.contents import DATA, FILES
from tests.support.certcli import BOUNDED, ISSUED, run

# Names beside a bundle: the ones the old cleanup took (`..` and anything), the names of its
# own temporary links, and any other text a file name may be.
NAMES = st.one_of(
    st.sampled_from(
        [
            "..x",
            "..2026",
            "..2026_11_30_09_00_00.123456",
            "..2026_11_30_09_00_00.123456.abcdefgh",
            "...",
            "..data.tmp",
            "ca.crt.tmp",
            ".ca.crt.tmp",
            "notes.txt",
        ]
    ),
    st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=20).map(
        lambda t: ".." + t
    ),
    st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=20),
).filter(lambda n: n not in (".", "..", DATA, *FILES))
ENTRIES = st.dictionaries(
    NAMES, st.tuples(st.booleans(), st.binary(max_size=64)), min_size=1, max_size=5
)


def lay_out(directory: Path, entries: dict[str, tuple[bool, bytes]]) -> dict[str, bytes]:
    """Each entry a file holding the bytes, or a folder holding them in `inside` (and, for a
    folder named like a version, a `ca.crt` too); what each path holds, by path."""
    directory.mkdir()
    for name, (folder, data) in entries.items():
        if folder:
            (directory / name).mkdir()
            (directory / name / "inside").write_bytes(data)
            (directory / name / "ca.crt").write_bytes(data)
        else:
            (directory / name).write_bytes(data)
    return snapshot(directory, entries)


def snapshot(directory: Path, entries: dict[str, tuple[bool, bytes]]) -> dict[str, bytes]:
    found = {}
    for name in entries:
        path = directory / name
        for each in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if each.exists():
                found[str(each.relative_to(directory))] = each.read_bytes()
    return found


def written(directory: Path, entries: dict[str, tuple[bool, bytes]]) -> list[str]:
    """The folders the commands made: the real folders that were not there before."""
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.is_dir() and not p.is_symlink() and p.name not in entries
    )


@BOUNDED
@given(entries=ENTRIES)
def test_issue_and_rotate_never_remove_what_they_did_not_create(
    entries: dict[str, tuple[bool, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"
    shutil.rmtree(out, ignore_errors=True)
    before = lay_out(out, entries)

    # --days 1 within a 30-day window: each rotate renews the serving certificate
    issued = run(capsys, "certs", "issue", "--out", str(out), "--days", "1")
    rotated = [
        run(capsys, "certs", "rotate", "--out", str(out), "--days", "1")[0] for _ in range(3)
    ]

    assert issued == (0, ISSUED.format(out=out), "")
    assert rotated == [0, 0, 0]
    assert snapshot(out, entries) == before
    ours = written(out, entries)
    assert (len(ours), os.readlink(out / DATA) in ours) == (2, True)
