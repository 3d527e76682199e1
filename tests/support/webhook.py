"""Start the real webhook (`runway serve`: gunicorn over TLS on 127.0.0.1) and talk to it."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from certs.bundle import Identity, issue_bundle
from tests.support.cluster import free_port, terminate
from tests.support.wait import wait_until

TIMEOUT = 10
SERVER_NAME = "runway-webhook.runway-system.svc"


def review(
    obj: Any,
    *,
    operation: str = "CREATE",
    old: Any = None,
    uid: str = "uid-1",
    kind: tuple[str, str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An AdmissionReview v1 for `obj` (kind taken from it unless given)."""
    if kind is None:
        group, _, version = obj["apiVersion"].rpartition("/")
        kind = (group, version, obj["kind"])
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
        "operation": operation,
        "object": obj,
        **extra,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@dataclass
class Webhook:
    port: int
    certs: Path
    proc: subprocess.Popen[bytes]
    log: Path
    extra_logs: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.certs / "ca.crt"))

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str | None = "application/json",
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.context(), timeout=TIMEOUT
        )
        try:
            headers = {"Content-Type": content_type} if content_type else {}
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def raw(self, data: bytes, *, timeout: float = TIMEOUT) -> tuple[int, dict[str, str], bytes]:
        """Send `data` as it is on a new TLS connection; the status, headers and body of the
        first answer (read until the server closes the connection or the body is complete)."""
        plain = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        with self.context().wrap_socket(plain, server_hostname=SERVER_NAME) as tls:
            tls.sendall(data)
            response = http.client.HTTPResponse(tls)
            response.begin()
            body = response.read()
            headers = {k.lower(): v for k, v in response.getheaders()}
            return response.status, headers, body

    def post(self, path: str, document: Any) -> tuple[int, Any]:
        status, body = self.request("POST", path, json.dumps(document).encode())
        return status, json.loads(body)

    def admit(self, path: str, document: Any) -> dict[str, Any]:
        """POST an AdmissionReview that must be answered with 200; its response."""
        status, answer = self.post(path, document)
        assert status == 200, answer
        assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
        response: dict[str, Any] = answer["response"]
        return response

    def stop(self) -> int:
        """SIGTERM, as Kubernetes stops a pod; the exit status."""
        return terminate(self.proc)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def issue_certs(directory: Path) -> Path:
    issue_bundle(
        directory,
        Identity.for_service("runway-webhook", "runway-system"),
        days=2,
        ca_days=3,
        now=dt.datetime.now(dt.UTC),
    )
    return directory


def start_webhook(
    workdir: Path, *, args: Sequence[str] = (), workers: int = 2, ready_path: str = "/readyz"
) -> Webhook:
    certs = issue_certs(workdir / "certs")
    port = free_port()
    log = workdir / "webhook.log"
    runway = Path(sys.executable).parent / "runway"
    argv = [
        str(runway),
        "serve",
        "--cert",
        str(certs / "tls.crt"),
        "--key",
        str(certs / "tls.key"),
        "--port",
        str(port),
        "--workers",
        str(workers),
        *args,
    ]
    handle = log.open("wb")
    proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    hook = Webhook(port, certs, proc, log, [handle])

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(
                f"runway serve exited with {proc.returncode}:\n{hook.log_text()[-3000:]}"
            )
        try:
            return hook.request("GET", ready_path)[0] == 200
        except (OSError, http.client.HTTPException):
            return False

    wait_until(ready, timeout=30, what=f"runway serve {ready_path}")
    return hook
