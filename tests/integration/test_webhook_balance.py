"""The workers keep an even share of the connections (webhook/balance.py; real gunicorn, TLS).

The kernel deals each new connection to one worker's SO_REUSEPORT socket at random; a worker
holding more than an even share of the connections that send requests answers "Connection:
close", so that no worker keeps more."""

from __future__ import annotations

import functools
import http.client
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.builders import model_deployment
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook

CONNECTIONS = 8
WORKERS = 2
DEALS = 30  # fresh sets of connections until one is uneven: (4,4) comes 27 times in 100
# requests on every connection: a worker counts a connection once it has sent a request, so the
# first round settles the counts and the later ones the spread
ROUNDS = 3


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Webhook]:
    hook = start_webhook(tmp_path, workers=WORKERS)
    try:
        yield hook
    finally:
        assert hook.stop() == 0, hook.log_text()[-3000:]


def _workers(master: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def _holders(port: int, workers: list[int]) -> dict[int, int]:
    """Client port -> the worker process holding the server's end of that connection (from
    /proc: the workers' socket inodes and the kernel's TCP table)."""
    owner: dict[str, int] = {}
    for pid in workers:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except FileNotFoundError:
                continue
            if target.startswith("socket:["):
                owner[target[len("socket:[") : -1]] = pid
    holders: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == port and inode in owner:
                holders[int(remote.rsplit(":", 1)[1], 16)] = owner[inode]
    return holders


def _open(server: Webhook) -> list[http.client.HTTPSConnection]:
    connections = []
    for _ in range(CONNECTIONS):
        conn = http.client.HTTPSConnection(
            "127.0.0.1", server.port, context=server.context(), timeout=10
        )
        conn.connect()  # TCP and the TLS handshake; no request yet
        connections.append(conn)
    return connections


def _accepted(server: Webhook, workers: list[int], ports: set[int]) -> bool:
    return ports <= _holders(server.port, workers).keys()


def _uneven_deal(server: Webhook) -> tuple[list[http.client.HTTPSConnection], list[int]]:
    """Connections that the kernel dealt unevenly, and the worker holding each."""
    workers = _workers(server.proc.pid)
    for _ in range(DEALS):
        connections = _open(server)
        ports = [conn.sock.getsockname()[1] for conn in connections]
        wait_until(
            functools.partial(_accepted, server, workers, set(ports)),
            timeout=60,  # a bound on a wait, never a time asserted: CI's clean run needed more than 10 s
            what="every connection accepted",
        )
        holders = _holders(server.port, workers)
        held = [holders[port] for port in ports]
        if max(Counter(held).values()) > CONNECTIONS // WORKERS:
            return connections, held
        for conn in connections:
            conn.close()
    raise AssertionError(f"{DEALS} deals of {CONNECTIONS} connections were all even")


def test_no_worker_keeps_more_than_an_even_share_of_the_connections(server: Webhook) -> None:
    connections, held = _uneven_deal(server)
    body = json.dumps(review(model_deployment(gpu=1))).encode()

    for _ in range(ROUNDS):  # a connection told to close is opened again by the next request
        for conn in connections:
            conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
            if response.will_close:
                conn.close()
    open_ports = {conn.sock.getsockname()[1] for conn in connections if conn.sock is not None}
    holders = _holders(server.port, _workers(server.proc.pid))
    kept = Counter(holders[port] for port in open_ports)
    for conn in connections:
        conn.close()

    assert max(Counter(held).values()) > CONNECTIONS // WORKERS  # as dealt
    assert max(kept.values(), default=0) <= CONNECTIONS // WORKERS, (kept, Counter(held))
