"""The integration tier: the real webhook server over TLS on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.webhook import Webhook, start_webhook


@pytest.fixture(scope="session")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    server = start_webhook(tmp_path_factory.mktemp("webhook"))
    try:
        yield server
    finally:
        code = server.stop()
        assert code == 0, server.log_text()[-3000:]
