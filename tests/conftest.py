"""Fixtures shared by every tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.selection.configs import ProviderRegistry
from tests.support.builders import shipped_registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REJECTED_EXAMPLES = EXAMPLES / "rejected"


def example_files() -> list[Path]:
    """Every example: those admitted (examples/*.yaml), then those meant to be rejected."""
    return sorted(EXAMPLES.glob("*.yaml")) + sorted(REJECTED_EXAMPLES.glob("*.yaml"))


def example_name(path: Path) -> str:
    """An example's name relative to examples/ (`vllm-1gpu.yaml`, `rejected/kaito-count.yaml`)."""
    return str(path.relative_to(EXAMPLES))


@pytest.fixture(scope="session")
def shipped() -> ProviderRegistry:
    """The registry of the five shipped configs (immutable, so shared)."""
    return shipped_registry()
