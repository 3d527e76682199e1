"""A stand-in for an inference Gateway (Envoy with body-based routing and the endpoint picker) in
the serving tier: it routes a request the way the rendered HTTPRoute and InferencePool say, to
the serving tier's pods, on 127.0.0.1.

What it does, per request, and what does it on a cluster:
- copies the body's `model` into the header X-Gateway-Model-Name (body-based routing's
  body-field-to-header plugin, gateway-api-inference-extension v1.5.0
  pkg/bbr/plugins/bodyfieldtoheader/body_field_to_header.go:34);
- takes the first rule of an HTTPRoute attached to the Gateway whose path prefix and exact header
  matches hold (Gateway API's HTTPRoute matching; Envoy on a cluster);
- resolves the rule's InferencePool backendRef: the pods whose labels hold the pool's
  selector.matchLabels, at the pool's targetPorts number; the first such pod answers (the endpoint
  picker's choice, with one pod there is no other);
- forwards the request and returns the pod's answer unchanged. No rule: 404; no pod: 503.
No Envoy or endpoint picker is built here (docs/checks.md, "What no test runs here")."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODEL_HEADER = "X-Gateway-Model-Name"
POOL = ("inference.networking.k8s.io", "InferencePool")


@dataclass(frozen=True)
class Endpoint:
    labels: Mapping[str, str]
    ip: str


@dataclass(frozen=True)
class Routes:
    """The Gateway (namespace, name), the HTTPRoutes and InferencePools rendered, the pods."""

    gateway: tuple[str, str]
    routes: Sequence[Mapping[str, Any]]
    pools: Sequence[Mapping[str, Any]]
    endpoints: Sequence[Endpoint]

    def target(self, path: str, headers: Mapping[str, str]) -> str | None:
        """The URL a request goes to, or None when no rule takes it."""
        for route in self.routes:
            if not self._attached(route):
                continue
            for rule in route["spec"].get("rules") or []:
                if any(self._matches(m, path, headers) for m in rule.get("matches") or [{}]):
                    return self._backend(route, rule["backendRefs"][0], path)
        return None

    def _attached(self, route: Mapping[str, Any]) -> bool:
        namespace = route["metadata"]["namespace"]
        return any(
            (p.get("namespace", namespace), p["name"]) == self.gateway
            for p in route["spec"]["parentRefs"]
        )

    @staticmethod
    def _matches(match: Mapping[str, Any], path: str, headers: Mapping[str, str]) -> bool:
        prefix = (match.get("path") or {}).get("value", "/")
        lowered = {k.lower(): v for k, v in headers.items()}
        return path.startswith(prefix) and all(
            lowered.get(h["name"].lower()) == h["value"] for h in match.get("headers") or []
        )

    def _backend(self, route: Mapping[str, Any], ref: Mapping[str, Any], path: str) -> str:
        assert (ref.get("group"), ref.get("kind")) == POOL, ref
        namespace = route["metadata"]["namespace"]
        pool = next(
            p
            for p in self.pools
            if (p["metadata"]["namespace"], p["metadata"]["name"]) == (namespace, ref["name"])
        )
        wanted = pool["spec"]["selector"]["matchLabels"]
        ips = [e.ip for e in self.endpoints if all(e.labels.get(k) == v for k, v in wanted.items())]
        if not ips:
            return ""
        return f"http://{ips[0]}:{pool['spec']['targetPorts'][0]['number']}{path}"


def _handler(routes: Routes) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            with contextlib.suppress(ValueError, AttributeError):
                headers[MODEL_HEADER] = str(json.loads(body).get("model", ""))
            url = routes.target(self.path, headers)
            if url is None or not url:
                self._answer(404 if url is None else 503, b'{"error": "no route"}', {})
                return
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    self._answer(response.status, response.read(), dict(response.headers))
            except urllib.error.HTTPError as err:
                self._answer(err.code, err.read(), dict(err.headers))

        def _answer(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


class StandInGateway:
    """The stand-in on 127.0.0.1:<free port> while inside `serving(routes)`."""

    def __init__(self, routes: Routes) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes))
        self.port = int(self.server.server_address[1])

    def __enter__(self) -> StandInGateway:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def kinds(objects: Sequence[Mapping[str, Any]], kind: str) -> Iterator[Mapping[str, Any]]:
    return (o for o in objects if o["kind"] == kind)
