"""Fixtures shared by every tier."""

from __future__ import annotations

import pytest
from hypothesis import settings

from core.selection.configs import ProviderRegistry
from tests.support.builders import shipped_registry


def pytest_configure(config: pytest.Config) -> None:
    """No test asserts on time, and hypothesis' 200 ms deadline per example is such an assertion
    (a property test of the render lock failed it at load 25): every property test runs without
    one, before any test module (and its @settings) is imported."""
    settings.register_profile("runway", deadline=None)
    settings.load_profile("runway")


@pytest.fixture(scope="session")
def shipped() -> ProviderRegistry:
    """The registry of the five shipped configs (immutable, so shared)."""
    return shipped_registry()
