"""The worker's connection limit follows the process's descriptor limit."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from webhook.worker import MAX_CONNECTIONS, SPARE_DESCRIPTORS, connection_limit


@pytest.fixture
def descriptors() -> Iterator[tuple[int, int]]:
    """The soft and hard descriptor limits, restored after the test lowers the soft one."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        yield limits
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_the_limit_is_max_connections_when_descriptors_allow(
    descriptors: tuple[int, int],
) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_CONNECTIONS * 2, descriptors[1]))

    assert connection_limit(MAX_CONNECTIONS) == MAX_CONNECTIONS


def test_the_limit_leaves_spare_descriptors_under_a_low_file_limit(
    descriptors: tuple[int, int],
) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, descriptors[1]))

    assert connection_limit(MAX_CONNECTIONS) == 512 - SPARE_DESCRIPTORS
