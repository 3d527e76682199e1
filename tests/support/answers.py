"""Loopback HTTP servers for the gateway tests, on one server: `AnswerServer` answers each route
with whatever a test sets (the odd answers a real LiteLLM cannot be made to give: wrong JSON
shapes, deep nesting, redirects) and records every request (method, path, and whether an
Authorization header came with it); `FakeUpstream` is a tiny OpenAI-compatible provider on it
(standing in for a provider such as OpenAI, which the tests cannot reach): GET /v1/models and
POST /v1/chat/completions, answering "hello from TAG" and recording each completion's model and
bearer token."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    authorization: str  # "" when none came
    body: bytes


NO_ROUTE = Answer(404, b'{"error": "no route"}')


@dataclass
class AnswerServer:
    """Answers a request with `respond(request)` when set, else with the answer of its path."""

    answers: dict[str, Answer] = field(default_factory=dict)
    respond: Callable[[Request], Answer] | None = None
    hits: list[tuple[str, str, bool]] = field(default_factory=list)  # method, path, authorized
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, request: Request) -> Answer:
        if self.respond is not None:
            return self.respond(request)
        return self.answers.get(request.path, NO_ROUTE)

    def start(self) -> AnswerServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                authorization = self.headers.get("Authorization")
                owner.hits.append((self.command, self.path, authorization is not None))
                request = Request(self.command, self.path, authorization or "", body)
                answer = owner.answer(request)
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


@dataclass(frozen=True)
class Hit:
    path: str
    model: str
    authorization: str


@dataclass
class FakeUpstream:
    tag: str
    hits: list[Hit] = field(default_factory=list)
    _server: AnswerServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"{self._server.url}/v1"

    def start(self) -> FakeUpstream:
        self._server = AnswerServer(respond=self._respond).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def _respond(self, request: Request) -> Answer:
        if request.method == "GET":
            return _json({"object": "list", "data": [{"id": "upstream-model"}]})
        model = str(json.loads(request.body or b"{}").get("model"))
        self.hits.append(Hit(request.path, model, request.authorization))
        return _json(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"hello from {self.tag}"},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
            }
        )


def _json(body: dict[str, Any]) -> Answer:
    return Answer(200, json.dumps(body).encode())
