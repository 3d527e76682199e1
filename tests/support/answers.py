"""Loopback HTTP servers for the gateway tests, on one server: `AnswerServer` answers each route
with whatever a test sets (the odd answers a real LiteLLM cannot be made to give: wrong JSON
shapes, deep nesting, redirects) and records every request (method, path, and whether an
Authorization header came with it); `FakeUpstream` is a tiny OpenAI-compatible provider on it
(standing in for a provider such as OpenAI, which the tests cannot reach): GET /v1/models and
POST /v1/chat/completions, answering "hello from TAG" and recording each completion's model and
bearer token.

An Answer can be trickled (`trickle` seconds between bytes, after the first `trickle_after` bytes
of the raw response, headers included), to stand for a LiteLLM that never finishes an answer;
`generated_info` builds /model/info answers of a given size and shape, to measure what reading
one costs (issue #40, items 9 and 14)."""

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
    trickle: float = 0.0  # seconds between bytes (0: all at once)
    trickle_after: int = 0  # bytes of the raw response sent at once before trickling


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
    _stopping: threading.Event = field(default_factory=threading.Event)

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
                if answer.trickle:
                    self._trickle(answer)
                    return
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def _trickle(self, answer: Answer) -> None:
                head = (
                    f"HTTP/1.1 {answer.status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(answer.body)}\r\nConnection: close\r\n\r\n"
                )
                raw = head.encode() + answer.body
                self.close_connection = True
                try:
                    self.wfile.write(raw[: answer.trickle_after])
                    self.wfile.flush()
                    for i in range(answer.trickle_after, len(raw)):  # bounded by the answer
                        if owner._stopping.wait(answer.trickle):
                            return
                        self.wfile.write(raw[i : i + 1])
                        self.wfile.flush()
                except OSError:
                    return  # the client went away

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def do_PATCH(self) -> None:
                self._answer()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# Shapes of a generated /model/info answer: what a real LiteLLM lists (about 1 KiB an entry),
# the smallest entries the client keeps (a name only), and the JSON that costs the most memory
# per byte once parsed (empty objects, empty lists, small numbers).
SHAPES = ("litellm", "names", "empty-objects", "empty-lists", "numbers")


def generated_info(size: int, shape: str) -> bytes:
    """A /model/info answer of `shape` with about `size` bytes (never more)."""
    unit = _unit(shape)
    count = max(0, (size - 12) // (len(unit) + 1))
    return b'{"data": [' + b",".join(_numbered(unit, i) for i in range(count)) + b"]}"


def _unit(shape: str) -> bytes:
    if shape == "litellm":
        info = {f"field_{i:02d}": None for i in range(30)} | {
            "id": "0123456789abcdef0123456789abcdef",
            "max_tokens": 128000,
            "input_cost_per_token": 2.5e-06,
            "supported_openai_params": ["temperature", "top_p", "stream", "tools"],
        }
        entry = {
            "model_name": "team-model-NNNNNNNN",
            "litellm_params": {"model": "openai/gpt-4o", "api_base": "https://api.example.com/v1"},
            "model_info": info,
        }
        return json.dumps(entry).encode()
    units = {
        "names": b'{"model_name":"NNNNNNNN"}',
        "empty-objects": b"{}",
        "empty-lists": b"[]",
        "numbers": b"0",
    }
    return units[shape]


def _numbered(unit: bytes, i: int) -> bytes:
    return unit.replace(b"NNNNNNNN", b"%08d" % i)


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
