"""Runway's health checks in Argo CD's layout (kustomize/argocd/resource_customizations), and what
docs/status.md promises Flux (kstatus) and Argo CD call each ModelDeployment status."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

CUSTOMIZATIONS = ROOT / "kustomize" / "argocd" / "resource_customizations"
MODEL_DEPLOYMENT = CUSTOMIZATIONS / "airunway.ai" / "ModelDeployment"
STATUS_DOC = ROOT / "docs" / "status.md"
# The table's heading row in docs/status.md.
TABLE_HEADING = "| testdata | status written | kstatus (Flux) | Argo CD |"


@dataclass(frozen=True)
class HealthTest:
    """One test of a health_test.yaml: the check's folder (`<group>/<Kind>`), the input's path
    in it, and the answer Argo CD's script must give."""

    check: str
    input_path: str
    status: str
    message: str

    @property
    def name(self) -> str:
        """The subtest name Argo CD's TestLuaHealthScript gives it."""
        return f"{self.check}/{self.input_path}"

    @property
    def case(self) -> str:
        """The testdata file's name without .yaml."""
        return Path(self.input_path).stem

    def obj(self, root: Path = CUSTOMIZATIONS) -> dict[str, Any]:
        loaded = yaml.safe_load((root / self.check / self.input_path).read_text())
        assert isinstance(loaded, dict)
        return loaded


def checks(root: Path = CUSTOMIZATIONS) -> list[str]:
    """Every `<group>/<Kind>` folder holding a health.lua."""
    return sorted(p.parent.relative_to(root).as_posix() for p in root.glob("*/*/health.lua"))


def health_tests(root: Path = CUSTOMIZATIONS) -> list[HealthTest]:
    """Every test of every health_test.yaml, in file order."""
    out = []
    for check in checks(root):
        loaded = yaml.safe_load((root / check / "health_test.yaml").read_text())
        for test in loaded["tests"]:
            expected = test["healthStatus"]
            out.append(
                HealthTest(check, test["inputPath"], expected["status"], expected["message"])
            )
    return out


def model_deployment_tests() -> list[HealthTest]:
    return [t for t in health_tests() if t.check == "airunway.ai/ModelDeployment"]


def documented() -> dict[str, tuple[str, str]]:
    """docs/status.md's table: (kstatus, Argo CD) by testdata case."""
    lines = STATUS_DOC.read_text().splitlines()
    start = lines.index(TABLE_HEADING) + 2  # the heading and the |---| row
    out = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        case = re.fullmatch(r"`([a-z0-9-]+)`", cells[0])
        assert case is not None, f"docs/status.md: {line!r} does not start with a `case`"
        out[case.group(1)] = (cells[2], cells[3])
    return out
