"""Fixtures shared by every tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from core.selection.configs import ProviderRegistry
from tests.support.builders import shipped_registry

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.fixture(scope="session")
def shipped() -> ProviderRegistry:
    """The registry of the five shipped configs (immutable, so shared)."""
    return shipped_registry()
