"""The Models page in live mode: how the GPU request fits the nodes' allocatable GPUs, read with
the portal's own client from a stand-in API server on loopback (the real one runs in the e2e
tier): it answers the sign-in's TokenReview and the list of nodes."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import kubernetes
import pytest

from tests.support.paths import EXAMPLES
from ui.app import create_app
from ui.cluster import Cluster
from ui.models_fit import Fit, NodeFit, gpu_fit
from ui.settings import Mode, UiSettings

NODES = {
    "gpu-a": {"nvidia.com/gpu": "8", "cpu": "64"},
    "gpu-b": {"nvidia.com/gpu": "1"},
    "cpu-c": {"cpu": "16"},
}
REVIEW = {
    "apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenReview",
    "spec": {"token": "t"},
    "status": {"authenticated": True, "user": {"username": "alice", "uid": "1"}},
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/api/v1/nodes":
            self._answer(404, {"kind": "Status", "code": 404})
            return
        items = [
            {"metadata": {"name": name}, "status": {"allocatable": allocatable}}
            for name, allocatable in NODES.items()
        ]
        self._answer(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer(201, REVIEW)

    def _answer(self, status: int, document: Any) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    yield Cluster(lambda: kubernetes.client.ApiClient(configuration))
    server.shutdown()
    server.server_close()


def obj(count: int, replicas: int = 1) -> dict[str, Any]:
    return {"spec": {"resources": {"gpu": {"count": count}}, "scaling": {"replicas": replicas}}}


def test_each_node_says_whether_it_could_hold_one_replica(cluster: Cluster) -> None:
    assert gpu_fit(obj(2, replicas=3), cluster) == Fit(
        "nvidia.com/gpu",
        2,
        3,
        (NodeFit("cpu-c", 0, False), NodeFit("gpu-a", 8, True), NodeFit("gpu-b", 1, False)),
    )


def test_an_unreachable_api_server_is_said_so() -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = "http://127.0.0.1:9"  # discard: nothing listens
    fit = gpu_fit(obj(1), Cluster(lambda: kubernetes.client.ApiClient(configuration)))
    assert fit == Fit(
        "nvidia.com/gpu",
        1,
        1,
        problem="the API server could not be reached (MaxRetryError)",
    )


def test_the_page_shows_the_fit_of_the_composed_object(cluster: Cluster) -> None:
    settings = UiSettings(mode=Mode.LIVE, sources=(str(EXAMPLES),), secret_key=b"k" * 32)
    client = create_app(settings, cluster=cluster).test_client()
    answer = client.get(
        "/models?pick=source:models/mistral-llmd", headers={"Authorization": "Bearer t"}
    )
    html = answer.get_data(as_text=True)
    found = re.search(r'<p id="models-fit">.*?</p>', html, re.S)
    assert answer.status_code == 200
    assert found is not None
    assert found.group(0) == (
        '<p id="models-fit">Replicas: 1, each asking for 2 <code>nvidia.com/gpu</code>. 1 of 3 '
        "nodes could hold one replica: gpu-a.</p>"
    )
