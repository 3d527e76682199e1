"""`make install` builds Runway as the image does (a wheel, from the locked build tools' versions
of setuptools): silently, and with every data file the code reads at run time."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT

DATA = (
    "renderer/schemas",
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
