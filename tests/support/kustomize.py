"""The shipped kustomizations (kustomize/<name>) as `kubectl kustomize` builds them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

KUBECTL = Path(sys.executable).parent / "kubectl"


def build(*names: str) -> list[dict[str, Any]]:
    """Every object of the kustomizations named, in order; fails the test on any stderr."""
    objects: list[dict[str, Any]] = []
    for name in names:
        done = subprocess.run(
            [str(KUBECTL), "kustomize", str(ROOT / "kustomize" / name)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, ""), f"kustomize/{name}: {done.stderr}"
        objects += [d for d in yaml.safe_load_all(done.stdout) if d]
    return objects
