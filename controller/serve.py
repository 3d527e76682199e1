"""/healthz (the threads run), /readyz (every watched kind has listed once) and /metrics, on a
plain HTTP port bound to the given host (127.0.0.1 by default)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable


def serve_probes(
    host: str,
    port: int,
    *,
    healthy: Callable[[], bool],
    ready: Callable[[], bool],
    metrics: Callable[[], str],
) -> http.server.ThreadingHTTPServer:
    """Start the probe server in a daemon thread; the caller shuts it down."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, metrics(), "text/plain; version=0.0.4")
            elif path in ("/healthz", "/readyz"):
                ok = healthy() if path == "/healthz" else ready()
                self._answer(200 if ok else 503, "ok\n" if ok else "not yet\n", "text/plain")
            else:
                self._answer(404, "not found\n", "text/plain")

        def _answer(self, code: int, text: str, kind: str) -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # probes every few seconds: nothing worth a log line

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="probes", daemon=True).start()
    return server
