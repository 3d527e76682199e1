"""A loopback HTTP server that answers each route with whatever a test sets: the odd answers a
real LiteLLM cannot be made to give (wrong JSON shapes, deep nesting, redirects), for the
gateway-sync's hostile-answer tests. It records every request it receives (route, and whether an
Authorization header came with it)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class AnswerServer:
    answers: dict[str, Answer] = field(default_factory=dict)
    hits: list[tuple[str, str, bool]] = field(default_factory=list)  # method, path, authorized
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> AnswerServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                path = self.path
                owner.hits.append((self.command, path, "Authorization" in self.headers))
                answer = owner.answers.get(path, Answer(404, b'{"error": "no route"}'))
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
