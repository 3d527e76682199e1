"""Runway's fingerprint, the shared input every cached render output is keyed under, covers the
code and data of every room rendering runs: a change to any of them renders everything again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from renderer.reuse.digests import RUNWAY_VERSION, builtin_schemas_version
from tests.support.paths import ROOT

PROBE = (
    "import json, sys\n"
    "import renderer.flow\n"
    "from renderer.reuse.digests import runway_fingerprint\n"
    "ours = {m.split('.')[0] for m, module in sys.modules.items()\n"
    "        if (getattr(module, '__file__', None) or '').startswith(sys.argv[1])}\n"
    "print(json.dumps([runway_fingerprint(), sorted(ours)]))\n"
)
ROOMS = ("core", "providers", "kubeio", "renderer")


def _fingerprint(tree: Path) -> tuple[str, list[str]]:
    """The fingerprint a render run from `tree` computes, and the rooms of `tree` it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    fingerprint, rooms = json.loads(done.stdout.splitlines()[-1])
    return fingerprint, rooms


def test_a_change_in_any_room_rendering_runs_changes_the_fingerprint(tmp_path: Path) -> None:
    tree = tmp_path / "runway"
    for room in ROOMS:
        shutil.copytree(ROOT / room, tree / room, ignore=shutil.ignore_patterns("__pycache__"))
    before, imported = _fingerprint(tree)

    after = []
    for room in ROOMS:
        with (tree / room / "__init__.py").open("a") as handle:
            handle.write("# edited\n")
        after.append(_fingerprint(tree)[0])

    assert imported == sorted(ROOMS)  # every room rendering imports is one edited here
    assert len({before, *after}) == 1 + len(ROOMS)


def test_the_builtin_schemas_version_read_from_the_file_is_the_distributions() -> None:
    """Read from kubernetes_validate/version.py (no import of the package or of
    importlib.metadata): the version the distribution's metadata gives."""
    assert builtin_schemas_version() == metadata.version("kubernetes-validate")


def test_the_version_in_the_fingerprint_is_the_distributions_and_pyprojects() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        declared = tomllib.load(handle)["project"]["version"]

    assert RUNWAY_VERSION == metadata.version("runway") == declared


MEMO_PROBE = (
    "import sys\n"
    "from pathlib import Path\n"
    "from renderer.reuse.digests import runway_fingerprint\n"
    "print(runway_fingerprint(Path(sys.argv[2])), runway_fingerprint())\n"
)


def _memoized(tree: Path, memo: Path) -> tuple[str, str]:
    """The fingerprint with `memo`, and as computed without one, of a render run from `tree`."""
    done = subprocess.run(
        [sys.executable, "-c", MEMO_PROBE, str(tree), str(memo)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kept, computed = done.stdout.split()
    return kept, computed


def test_the_fingerprint_kept_in_git_is_the_one_computed_while_no_file_changed(
    tmp_path: Path,
) -> None:
    """Kept under the files' Stats, the fingerprint follows every change: one to a file's bytes
    that keeps its size and mtime (its ctime changes), a file added, garbage in the memo."""
    tree, memo = tmp_path / "runway", tmp_path / "memo"
    for room in ROOMS:
        shutil.copytree(ROOT / room, tree / room, ignore=shutil.ignore_patterns("__pycache__"))
    first = _memoized(tree, memo)
    assert first[0] == first[1] and memo.read_text().split()[1] == first[1]
    assert _memoized(tree, memo) == first  # read back

    edited = tree / "core" / "__init__.py"
    before, text = edited.stat(), edited.read_bytes()
    edited.write_bytes(text[:-1] + (b"#" if text[-1:] != b"#" else b"\n"))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = _memoized(tree, memo)
    assert second[0] == second[1] != first[1]

    (tree / "providers" / "added.txt").write_text("data\n")
    third = _memoized(tree, memo)
    assert third[0] == third[1] not in {first[1], second[1]}

    memo.write_text("garbage")
    assert _memoized(tree, memo) == third
