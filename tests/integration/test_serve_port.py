"""`runway serve` on a port another socket listens on exits 2 with one line naming the port,
whether the holder is any listener or another `runway serve` (whose workers bind SO_REUSEPORT,
which a second server of the same user could otherwise join)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from tests.support.cluster import free_port
from tests.support.paths import ROOT
from tests.support.webhook import issue_certs, start_webhook

TIMEOUT = 60


@contextmanager
def plain_listener(tmp_path: Path) -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@contextmanager
def reuse_port_listener(tmp_path: Path) -> Iterator[int]:
    """A listener as gunicorn's workers open theirs (SO_REUSEADDR and SO_REUSEPORT)."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield port


@contextmanager
def running_webhook(tmp_path: Path) -> Iterator[int]:
    hook = start_webhook(tmp_path / "first")
    try:
        yield hook.port
        assert hook.request("GET", "/readyz")[0] == 200  # the first server is untouched
    finally:
        assert hook.stop() == 0


HOLDERS: dict[str, Callable[[Path], AbstractContextManager[int]]] = {
    "listening-socket": plain_listener,
    "reuse-port-socket": reuse_port_listener,
    "runway-serve": running_webhook,
}


@pytest.mark.parametrize("holder", sorted(HOLDERS), ids=sorted(HOLDERS))
def test_serve_refuses_a_port_in_use(holder: str, tmp_path: Path) -> None:
    certs = issue_certs(tmp_path / "certs")
    runway = Path(sys.executable).parent / "runway"
    with HOLDERS[holder](tmp_path) as port:
        argv = [str(runway), "serve", "--cert", str(certs / "tls.crt"), "--key"]
        argv += [str(certs / "tls.key"), "--port", str(port)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"runway: --port: 127.0.0.1:{port} is already in use (another runway serve?); "
        "stop that server or choose another port\n",
    )


def test_plain_gunicorn_with_the_shipped_config_refuses_a_port_in_use(tmp_path: Path) -> None:
    """Images that start gunicorn themselves (webhook/gunicorn.conf.py) get the same check, in
    gunicorn's on_starting: one "Error:" line and exit 1, gunicorn's own code for it."""
    certs = issue_certs(tmp_path / "certs")
    gunicorn = Path(sys.executable).parent / "gunicorn"
    config = ROOT / "webhook" / "gunicorn.conf.py"
    with plain_listener(tmp_path) as port:
        env = {
            **os.environ,
            "RUNWAY_PORT": str(port),
            "RUNWAY_CERT": str(certs / "tls.crt"),
            "RUNWAY_KEY": str(certs / "tls.key"),
        }
        done = subprocess.run(
            [str(gunicorn), "-c", str(config), "webhook.app:create_app()"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            env=env,
        )

    assert (done.returncode, done.stdout, done.stderr.splitlines()[1:]) == (
        1,
        "",
        [
            "",
            f"Error: --port: 127.0.0.1:{port} is already in use (another runway serve?); "
            "stop that server or choose another port",
            "",
        ],
    )
