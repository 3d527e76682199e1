"""Fixtures shared by every tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.registry import ProviderRegistry
from tests.support.builders import shipped_registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def shipped() -> ProviderRegistry:
    """The registry of the five shipped configs (immutable, so shared)."""
    return shipped_registry()
