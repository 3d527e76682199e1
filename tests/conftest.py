"""Fixtures shared by every tier."""

from __future__ import annotations

import pytest

from core.selection.configs import ProviderRegistry
from tests.support.builders import shipped_registry


@pytest.fixture(scope="session")
def shipped() -> ProviderRegistry:
    """The registry of the five shipped configs (immutable, so shared)."""
    return shipped_registry()
