"""The shipped kustomizations (kustomize/<name>) as `kubectl kustomize` builds them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

UI = ROOT / "kustomize" / "ui"
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


def with_apply_as_user(directory: Path) -> list[dict[str, Any]]:
    """What a site's overlay of kustomize/ui with the apply-as-user Component builds (kustomize
    takes only relative paths to other kustomizations)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(UI, directory)
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "components": [f"{base}/apply-as-user"],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    done = subprocess.run(
        [str(KUBECTL), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    return [d for d in yaml.safe_load_all(done.stdout) if d]
