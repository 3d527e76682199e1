"""The LiteLLM client keeps connections alive (issue #46): requests reuse one connection while
LiteLLM keeps it open, and a request whose reused connection LiteLLM closed while it was idle is
sent once more on a new connection, not failed.

The server is http.server on loopback speaking HTTP/1.1 (uvicorn, which serves LiteLLM, keeps
connections alive the same way); the client is the real one."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gateway.litellm import LiteLLM

MODELS = json.dumps({"data": [{"id": "m"}]}).encode()


@dataclass
class KeepAlive:
    """Counts connections and requests; with `drop_after_answer` it closes each connection right
    after answering on it, without saying so (as a server closing an idle connection does)."""

    drop_after_answer: bool = False
    connections: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    def start(self) -> KeepAlive:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with owner.lock:
                    owner.connections += 1

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                with owner.lock:
                    owner.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(MODELS)))
                self.end_headers()
                self.wfile.write(MODELS)
                self.wfile.flush()
                self.close_connection = owner.drop_after_answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def keeping() -> Iterator[KeepAlive]:
    server = KeepAlive().start()
    yield server
    server.stop()


@pytest.fixture
def dropping() -> Iterator[KeepAlive]:
    server = KeepAlive(drop_after_answer=True).start()
    yield server
    server.stop()


def test_requests_reuse_one_kept_alive_connection(keeping: KeepAlive) -> None:
    client = LiteLLM(keeping.url, "k")

    answers = [client.public_models() for _ in range(3)]

    assert answers == [{"m"}] * 3
    assert (keeping.connections, keeping.requests) == (1, 3)


def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_again(
    dropping: KeepAlive,
) -> None:
    client = LiteLLM(dropping.url, "k")

    answers = [client.public_models() for _ in range(3)]

    assert answers == [{"m"}] * 3
    # Each request after the first found its connection closed and went out on a new one.
    assert (dropping.connections, dropping.requests) == (3, 3)
