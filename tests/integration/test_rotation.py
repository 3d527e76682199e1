"""Certificate rotation without a restart, under load: no request fails, new connections get the
new certificate (gunicorn loads the files for every connection; the bundle switches atomically)."""

from __future__ import annotations

import datetime as dt
import functools
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from certs.bundle import load_certificates, rotate_bundle
from tests.support.builders import model_deployment
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook

THREADS = 4
MAX_REQUESTS_PER_THREAD = 250  # bounded load on loopback
ROTATIONS = 3


@pytest.fixture
def rotating(tmp_path: Path) -> Iterator[Webhook]:
    server = start_webhook(tmp_path)
    try:
        yield server
    finally:
        assert server.stop() == 0


def reached(done: list[int], target: int) -> bool:
    return done[0] >= target


def served_serial(hook: Webhook) -> int:
    with (
        socket.create_connection(("127.0.0.1", hook.port), timeout=10) as raw,
        hook.context().wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_rotation_under_load_loses_no_request(rotating: Webhook) -> None:
    body = json.dumps(review(model_deployment(gpu=1))).encode()
    context = rotating.context()  # trusts the CA; leaf rotations keep the CA
    done, failures = [0], []
    stop, lock = threading.Event(), threading.Lock()

    def load() -> None:
        for _ in range(MAX_REQUESTS_PER_THREAD):
            if stop.is_set():
                return
            conn = http.client.HTTPSConnection(
                "127.0.0.1", rotating.port, context=context, timeout=10
            )
            try:  # a new connection each time: a new handshake with whatever certificate is current
                conn.request(
                    "POST", "/mutate", body=body, headers={"Content-Type": "application/json"}
                )
                response = conn.getresponse()
                ok = (
                    response.status == 200
                    and json.loads(response.read())["response"]["allowed"] is True
                )
                outcome = None if ok else f"status {response.status}"
            except (OSError, http.client.HTTPException) as err:
                outcome = f"{type(err).__name__}: {err}"
            finally:
                conn.close()
            with lock:
                done[0] += 1
                if outcome:
                    failures.append(outcome)

    workers = [threading.Thread(target=load) for _ in range(THREADS)]
    for worker in workers:
        worker.start()
    serials = [served_serial(rotating)]
    try:
        for round_ in range(1, ROTATIONS + 1):
            wait_until(
                functools.partial(reached, done, 40 * round_),
                timeout=60,
                what="requests before rotating",
            )
            renewed = rotate_bundle(
                rotating.certs,
                renew_within=dt.timedelta(
                    days=2.5
                ),  # the 2-day serving certificate, not the 3-day CA
                days=2,
                ca_days=3,
                now=dt.datetime.now(dt.UTC),
            )
            assert renewed == ["tls"]
            serials.append(served_serial(rotating))
            assert serials[-1] == load_certificates(rotating.certs / "tls.crt")[0].serial_number
        wait_until(
            lambda: done[0] >= 40 * (ROTATIONS + 1), timeout=60, what="requests after rotating"
        )
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)

    assert failures == []
    assert done[0] >= 40 * (ROTATIONS + 1)
    assert len(set(serials)) == ROTATIONS + 1
