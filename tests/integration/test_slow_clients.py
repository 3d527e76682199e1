"""Slow or broken clients cannot take the webhook away from everyone else (real gunicorn, TLS)."""

from __future__ import annotations

import http.client
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import model_deployment
from tests.support.slowclients import SlowClients
from tests.support.webhook import Webhook, review, start_webhook

NORMAL_REQUESTS = 10


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Webhook]:
    hook = start_webhook(tmp_path)
    try:
        yield hook
    finally:
        assert hook.stop() == 0, hook.log_text()[-3000:]


def _post(conn: http.client.HTTPSConnection, uid: str) -> tuple[int, Any]:
    body = json.dumps(review(model_deployment(gpu=1), uid=uid)).encode()
    conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_requests_are_answered_while_50_slow_clients_hold_connections(server: Webhook) -> None:
    kept_alive = http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=server.context(), timeout=10
    )
    assert _post(kept_alive, "before")[0] == 200  # opened before the attack, reused during it
    attack = SlowClients(server.port, server.context(), count=50, seconds=12)
    attack.start()
    assert attack.wait_started()

    answers = []
    for i in range(NORMAL_REQUESTS):
        fresh = http.client.HTTPSConnection(
            "127.0.0.1", server.port, context=server.context(), timeout=10
        )
        answers.append(_post(fresh, f"fresh-{i}"))
        fresh.close()
        answers.append(_post(kept_alive, f"kept-{i}"))
    attack.join()
    kept_alive.close()

    assert [(status, body["response"]) for status, body in answers] == [
        (200, {"uid": uid, "allowed": True})
        for i in range(NORMAL_REQUESTS)
        for uid in (f"fresh-{i}", f"kept-{i}")
    ]
    # The server ended every slow connection (read timeout) before the clients gave up: header
    # dribblers were closed, short bodies were answered as a client gone away (400).
    assert Counter(attack.endings) == {b"closed": 25, b"HTTP/1.1 400 BAD REQUEST": 25}
    assert "Traceback" not in server.log_text()
