"""A stand-in API server for the provider-config watch: list and watch of InferenceProviderConfigs.

The real kube-apiserver runs only in the e2e tier (it is built by `make cluster`); the readiness
tests need a server whose watch ends and whose lists fail exactly when the test says, which a
real one does not do on request. It binds 127.0.0.1 on port 0, answers lists with the shipped
configs, and ends every watch after one event, as a server does when timeoutSeconds runs out.
Each request first calls `on_request(kind, index)` (kind "list" or "watch"), and `list_status`
says how list number `index` (from 0) is answered: 200 or an error status.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes

from core.model.kinds import GROUP, INFERENCE_PROVIDER_CONFIG_PLURAL, VERSION
from kubeio.shipped import bundled_config_objects

PATH = f"/apis/{GROUP}/{VERSION}/{INFERENCE_PROVIDER_CONFIG_PLURAL}"


class FakeApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        *,
        on_request: Callable[[str, int], None],
        list_status: Callable[[int], int],
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.on_request = on_request
        self.list_status = list_status
        self.counts = {"list": 0, "watch": 0}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def client(self) -> kubernetes.client.ApiClient:
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        return kubernetes.client.ApiClient(configuration)

    def count(self, kind: str) -> int:
        with self.lock:
            return self.counts[kind]

    def next_index(self, kind: str) -> int:
        with self.lock:
            index = self.counts[kind]
            self.counts[kind] += 1
            return index


class _Handler(BaseHTTPRequestHandler):
    server: FakeApiServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != PATH:
            self._answer(404, {"kind": "Status", "code": 404})
            return
        watching = parse_qs(url.query).get("watch", [""])[0].lower() == "true"
        kind = "watch" if watching else "list"
        index = self.server.next_index(kind)
        self.server.on_request(kind, index)
        if watching:
            self._watch_once()
            return
        status = self.server.list_status(index)
        if status != 200:
            self._answer(status, {"kind": "Status", "code": status, "message": "injected"})
            return
        items = bundled_config_objects()
        for item in items:
            item["metadata"]["resourceVersion"] = "1"
        self._answer(
            200,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "InferenceProviderConfigList",
                "metadata": {"resourceVersion": "1"},
                "items": items,
            },
        )

    def _watch_once(self) -> None:
        """One MODIFIED event, then the end of the response: a watch that ran its course."""
        obj = bundled_config_objects()[0]
        obj["metadata"]["resourceVersion"] = "2"
        line = json.dumps({"type": "MODIFIED", "object": obj}).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(line)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(line)

    def _answer(self, status: int, document: Any) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # one request per watch cycle: nothing worth reading


@contextmanager
def fake_api_server(
    *, on_request: Callable[[str, int], None], list_status: Callable[[int], int]
) -> Iterator[FakeApiServer]:
    server = FakeApiServer(on_request=on_request, list_status=list_status)
    thread = threading.Thread(target=server.serve_forever, name="fake-api", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
