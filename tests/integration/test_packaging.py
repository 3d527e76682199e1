"""`make install` builds Runway as the image does (a wheel, from the locked build tools' versions
of setuptools): silently, and with every data file the code reads at run time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.paths import ROOT

DATA = (
    "renderer/output/schemas",
    "providers/dynamo/catalogs",
    "providers/vllm/catalogs",
    "providers/kaito/facts",
    "providers/llmd/facts",
)


def test_the_wheel_builds_without_a_warning_and_ships_every_data_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    (wheel,) = tmp_path.glob("runway-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    for folder in DATA:
        files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob("*.json"))
        assert files, folder
        assert [f for f in files if f not in shipped] == [], folder
    assert "core/model/versions.env" in shipped
    assert {
        f"providers/{p}/config.yaml" for p in ("dynamo", "kaito", "kuberay", "llmd", "vllm")
    } <= shipped
    assert not [f for f in shipped if f.startswith(("tests/", "tools/", "bench/"))]


def test_make_install_prints_no_warning_and_installs_only_the_runtime(tmp_path: Path) -> None:
    """`make install` on a copy of the repository (what a clean clone holds), into a new .venv:
    make's own command lines and nothing else, and exactly the runtime lock plus Runway."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    )
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    python: str = getattr(sys, "_base_executable", sys.executable)  # the interpreter, not this venv
    # A make of its own: under `make test`, MAKELEVEL would have it print "Entering directory".
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(
        ["make", "install", f"PYTHON={python}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    frozen = subprocess.run(
        [str(tmp_path / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lock = {
        line.split("==")[0].lower()
        for line in (ROOT / "requirements" / "runtime.lock").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    installed = {line.split("==")[0].lower().replace("_", "-") for line in frozen.stdout.split()}

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert [
        line
        for line in done.stdout.splitlines()
        if not line.startswith((python, ".venv/bin/python"))
    ] == ["touch .venv/.installed"]
    # pip, and the setuptools Python 3.11's venv module puts in every new virtualenv
    assert installed - {"pip", "setuptools"} == {n.replace("_", "-") for n in lock} | {"runway"}
    assert not (tmp_path / ".venv" / "bin" / "pytest").exists()
