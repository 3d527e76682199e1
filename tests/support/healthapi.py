"""A stand-in API server for the status controller's writes: the CRD list and pod lists by
label selector of the provider health pass (controller/health.py), and status writes of
InferenceProviderConfigs and ModelDeployments, each attempt recorded with its time.

The unit tier has no kube-apiserver (tests/e2e runs the real one, including the exact selector
the issue reports). Here the test decides which pod lists and which status writes the server
refuses, independently of Runway's own selector parser, to check the rule that one config's
refusal is that config's error only. Binds 127.0.0.1 on port 0.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes


@dataclass
class Refusals:
    selectors: frozenset[str] = frozenset()  # pod lists by these are answered 400
    writes: frozenset[str] = frozenset()  # status writes of these objects are answered 422
    written: dict[str, dict[str, Any]] = field(default_factory=dict)  # name: status
    attempts: list[tuple[float, str]] = field(default_factory=list)  # (monotonic time, name)
    lock: threading.Lock = field(default_factory=threading.Lock)


class HealthApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, refusals: Refusals) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refusals = refusals

    def client(self) -> kubernetes.client.ApiClient:
        config = kubernetes.client.Configuration()
        config.host = f"http://127.0.0.1:{self.server_address[1]}"
        return kubernetes.client.ApiClient(config)


class _Handler(BaseHTTPRequestHandler):
    server: HealthApiServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.endswith("/customresourcedefinitions"):
            self._answer(200, {"kind": "CustomResourceDefinitionList", "items": []})
            return
        if url.path.endswith("/pods"):
            selector = (parse_qs(url.query).get("labelSelector") or [""])[0]
            if selector in self.server.refusals.selectors:
                self._answer(400, _status(400, "BadRequest", f"unable to parse {selector}"))
            else:
                self._answer(200, {"kind": "PodList", "items": []})
            return
        self._answer(404, _status(404, "NotFound", url.path))

    def do_PUT(self) -> None:
        url = urlsplit(self.path)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        name = url.path.removesuffix("/status").rpartition("/")[2]
        refusals = self.server.refusals
        with refusals.lock:
            refusals.attempts.append((time.monotonic(), name))
        if not url.path.endswith("/status") or name in refusals.writes:
            self._answer(422, _status(422, "Invalid", f"{name}: refused"))
            return
        with refusals.lock:
            refusals.written[name] = body["status"]
        self._answer(200, body)

    def _answer(self, status: int, document: Any) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return None


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


@contextmanager
def health_api(refusals: Refusals) -> Iterator[HealthApiServer]:
    server = HealthApiServer(refusals)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
