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

from renderer.digests import RUNWAY_VERSION, builtin_schemas_version
from tests.conftest import ROOT

PROBE = (
    "import json, sys\n"
    "import renderer.pipeline\n"
    "from renderer.digests import runway_fingerprint\n"
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
