"""Slow or broken clients cannot take the webhook away from everyone else (real gunicorn, TLS)."""

from __future__ import annotations

import http.client
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import model_deployment
from tests.support.slowclients import IdleClients, SlowClients, probe
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook
from webhook.worker import HANDSHAKE_SECONDS, MAX_CONNECTIONS, READ_SECONDS

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
    # The server ended every slow connection at its read deadline before the clients gave up:
    # each was answered 408 and closed (a header dribbler sees the close as its next write
    # fails, a short body reads the answer).
    assert Counter(attack.endings) == {b"closed": 25, b"HTTP/1.1 408 Request Timeout": 25}
    assert "Traceback" not in server.log_text()


# Issue #18, item 9: a normal client's handshake and request while slow or idle connections
# attack. The probes' timeout (PROBE_TIMEOUT) is the bound: before the fix a new connection's
# handshake waited 19-35 s behind 10-50 slow-header clients, and 140 idle connections blocked
# the webhook for 37 s. Latencies themselves are printed by `make fuzz`, not asserted.
PROBE_TIMEOUT = 8  # the fixed server's slowest probe here takes about 0.1 s
ATTACK_SECONDS = 60  # an upper bound: the test stops the attack once each client was ended twice
PROBE_GAP = 0.02  # seconds between probes: the probes last as long as the attack, not a count
MIN_PROBES = 5


def _probe_body(uid: str) -> bytes:
    return json.dumps(review(model_deployment(gpu=1), uid=uid)).encode()


def _probes_while(attack_running: Callable[[], bool], server: Webhook) -> list[tuple[int, str]]:
    """Fresh-connection probes, one after another, for as long as the attack runs, and at least
    MIN_PROBES; bounded by ATTACK_SECONDS (at most ATTACK_SECONDS / PROBE_GAP probes). The bound
    is in time: a count ran out in 6 s on a fast machine, before the server's first read deadline
    (5 s) had ended the attack's connections twice."""
    answers: list[tuple[int, str]] = []
    deadline = time.monotonic() + ATTACK_SECONDS
    while len(answers) < MIN_PROBES or (attack_running() and time.monotonic() < deadline):
        answer = probe(
            server.port, server.context(), _probe_body(f"p{len(answers)}"), timeout=PROBE_TIMEOUT
        )
        answers.append((answer.status, answer.uid))
        time.sleep(PROBE_GAP)  # pacing the probes, not waiting for an event
    return answers


@pytest.mark.parametrize("count", [10, 25, 50])
def test_slow_header_clients_do_not_hold_up_a_new_connection(count: int, server: Webhook) -> None:
    attack = SlowClients(
        server.port,
        server.context(),
        count=count,
        seconds=ATTACK_SECONDS,
        headers_only=True,
        sustain=True,  # each one connects again when ended, as an attacker does
    )
    attack.start()
    assert attack.wait_started()

    answers = _probes_while(lambda: len(attack.endings) < 2 * count, server)
    endings = set(attack.endings)
    attack.stop()

    assert answers == [(200, f"p{i}") for i in range(len(answers))]
    # Every slow connection was ended by the server (read deadline), none by the clients' end.
    assert endings == {b"closed"}
    assert "Traceback" not in server.log_text()


# Issue #40, item 11: reconnecting slow-header clients past the threads (2 workers x 64). Each
# held a thread for its whole 5 s read deadline, so with 200 of them a normal client's p99 was
# 2.7 s, with 400 5.5 s (max 9.9 s, one handshake reset). Requests are now read ahead in the
# worker's poller and reach a thread only once complete. The probes' timeout (PROBE_TIMEOUT) is
# the only time bound; latencies are printed by `make fuzz` (tests/fuzzing/server.py).
LATE = (
    3.5  # seconds past READ_SECONDS: the poll loop's second, two more lines to see the close, load
)


@pytest.mark.parametrize("count", [200, 400])
def test_hundreds_of_reconnecting_slow_header_clients_hold_no_thread(
    count: int, server: Webhook
) -> None:
    attack = SlowClients(
        server.port,
        server.context(),
        count=count,
        seconds=ATTACK_SECONDS,
        headers_only=True,
        sustain=True,
    )
    attack.start()
    assert attack.wait_started()

    answers = _probes_while(lambda: len(attack.endings) < 2 * count, server)
    endings, lifetimes = set(attack.endings), list(attack.lifetimes)
    attack.stop()

    # every probe answered (a reset handshake or a timeout raises), every slow client closed
    # by the server at its read deadline
    assert answers == [(200, f"p{i}") for i in range(len(answers))]
    assert endings == {b"closed"}
    assert len(lifetimes) >= count
    assert max(lifetimes) < READ_SECONDS + LATE
    assert "Traceback" not in server.log_text()


@pytest.mark.parametrize(
    ("count", "handshake"),
    [(150, False), (2100, False), (300, True)],
    ids=["150", "past-the-limit", "300-after-their-handshake"],
)
def test_idle_connections_do_not_block_others(count: int, handshake: bool, server: Webhook) -> None:
    # Every close the clients see before HANDSHAKE_SECONDS have passed since the first one
    # connected is an eviction: no connection was accepted earlier, and the server closes one
    # that sent nothing only HANDSHAKE_SECONDS after accepting it, or when it evicts it.
    started = time.monotonic()
    idle = IdleClients(server.port, count=count, context=server.context() if handshake else None)
    idle.start()
    must_evict = count - 2 * MAX_CONNECTIONS if count > 2 * MAX_CONNECTIONS else 0
    try:
        answers = [
            probe(server.port, server.context(), _probe_body(f"p{i}"), timeout=PROBE_TIMEOUT)
            for i in range(MIN_PROBES)
        ]
        # Past 1,000 per worker, each new connection replaced the oldest idle one at once.
        evicted = idle.closed_by_server()
        while evicted < must_evict and time.monotonic() < started + HANDSHAKE_SECONDS - 0.5:
            time.sleep(0.05)  # sampling within the handshake window: a measurement, not a wait
            evicted = idle.closed_by_server()
        wait_until(lambda: idle.closed_by_server() == count, timeout=30, what="idle ones closed")
    finally:
        idle.stop()

    assert [(a.status, a.uid) for a in answers] == [(200, f"p{i}") for i in range(MIN_PROBES)]
    assert evicted >= must_evict
    assert "Traceback" not in server.log_text()
