"""Where the tests find the project's own files: its root and the examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
REJECTED_EXAMPLES = EXAMPLES / "rejected"


def example_files() -> list[Path]:
    """Every example: those admitted (examples/*.yaml), then those meant to be rejected."""
    return sorted(EXAMPLES.glob("*.yaml")) + sorted(REJECTED_EXAMPLES.glob("*.yaml"))


def example_model_deployments() -> list[tuple[str, dict[str, Any]]]:
    """Every ModelDeployment in every YAML file under examples/ (gateway/ and rejected/ too), by
    its file's name."""
    return [
        (example_name(path), obj)
        for path in sorted(EXAMPLES.rglob("*.yaml"))
        for obj in yaml.safe_load_all(path.read_text())
        if obj and obj.get("kind") == "ModelDeployment"
    ]


def example_name(path: Path) -> str:
    """An example's name relative to examples/ (`vllm-1gpu.yaml`, `rejected/kaito-count.yaml`)."""
    return str(path.relative_to(EXAMPLES))
