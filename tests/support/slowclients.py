"""Slow, idle and broken clients against the real webhook (loopback, bounded in count and time),
and the normal client whose latency they must not raise."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SEND_EVERY = 1.0  # seconds between header lines
SERVER_NAME = "runway-webhook.runway-system.svc"


@dataclass
class SlowClients:
    """`count` TLS connections, half sending one header line per second, half announcing a
    larger body than they send (`headers_only`: all of them send header lines); `seconds` bounds
    the whole attack. With `sustain`, each one reconnects when the server ends it, until
    `seconds` are up."""

    port: int
    context: ssl.SSLContext
    count: int = 50
    seconds: float = 12.0
    sustain: bool = False
    headers_only: bool = False
    started: threading.Event = field(default_factory=threading.Event)
    endings: list[bytes] = field(default_factory=list)  # what each connection finally read
    lifetimes: list[float] = field(default_factory=list)  # header dribblers: connect to close
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _opened: int = 0
    _until: float = 0.0
    _stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._until = time.monotonic() + self.seconds
        for i in range(self.count):
            dribble = self.headers_only or i % 2 == 0
            target = self._dribble_headers if dribble else self._short_body
            thread = threading.Thread(target=self._run, args=(target,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def wait_started(self, timeout: float = 30) -> bool:
        return self.started.wait(timeout)

    def stop(self) -> None:
        """End the attack now (each connection gives up within SEND_EVERY) and wait for it."""
        self._until = 0.0
        self._stopping.set()
        self.join()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=self.seconds + 30)

    def _run(self, attack: Callable[[], None]) -> None:
        try:
            attack()
        except OSError:
            self._ended(b"refused")
        while self.sustain and time.monotonic() < self._until - 1:
            try:
                attack()
            except OSError:
                self._ended(b"refused")

    def _connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.seconds)
        conn = self.context.wrap_socket(raw, server_hostname=SERVER_NAME)
        with self._lock:
            self._opened += 1
            if self._opened == self.count:
                self.started.set()
        return conn

    def _dribble_headers(self) -> None:
        """Header lines until the server resets the connection; the server's end-of-file is
        ignored, as an attacker does, so a server that lingers on closing waits for it."""
        with self._connect() as conn:
            opened = time.monotonic()
            try:
                conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")
                i = 0
                while time.monotonic() < self._until:
                    conn.sendall(f"X-Slow-{i}: y\r\n".encode())
                    i += 1
                    self._stopping.wait(SEND_EVERY)
            except OSError:
                with self._lock:
                    self.lifetimes.append(time.monotonic() - opened)
                self._ended(b"closed")
                return
        self._ended(b"still open")

    def _short_body(self) -> None:
        with self._connect() as conn:
            head = (
                b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n"
            )
            conn.sendall(head + b'{"kind": "AdmissionReview"')
            conn.settimeout(max(self._until - time.monotonic(), 0.1))
            answer = b""
            try:
                while chunk := conn.recv(65536):
                    answer += chunk
            except TimeoutError:
                self._ended(b"still open")
                return
            except OSError:
                pass
            self._ended(answer.split(b"\r\n", 1)[0] if answer else b"closed")

    def _ended(self, how: bytes) -> None:
        with self._lock:
            self.endings.append(how)


@dataclass
class IdleClients:
    """`count` connections that never send a byte (no TLS ClientHello), or, with `context`,
    that complete the TLS handshake and then send nothing; `closed_by_server()` counts those the
    server has closed."""

    port: int
    count: int = 150
    context: ssl.SSLContext | None = None
    sockets: list[socket.socket] = field(default_factory=list)

    def start(self) -> None:
        for _ in range(self.count):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=SERVER_NAME)
            self.sockets.append(sock)

    def closed_by_server(self) -> int:
        """How many of them the server has closed (read end-of-file or a reset)."""
        closed = 0
        for sock in self.sockets:
            sock.setblocking(False)
            try:
                closed += sock.recv(1) == b""
            except (BlockingIOError, ssl.SSLWantReadError):
                continue
            except OSError:
                closed += 1
        return closed

    def stop(self) -> None:
        for sock in self.sockets:
            sock.close()


@dataclass(frozen=True, slots=True)
class Probe:
    """One normal client's fresh connection: seconds to the TLS handshake, then to the answer."""

    handshake: float
    request: float
    status: int
    uid: str


def probe(port: int, context: ssl.SSLContext, body: bytes, *, timeout: float = 60) -> Probe:
    """A fresh TLS connection and one POST /validate of `body`, as the API server sends it."""
    started = time.monotonic()
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Go's clients do
    tls = context.wrap_socket(raw, server_hostname=SERVER_NAME)
    shaken = time.monotonic()
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    conn.sock = tls
    try:
        conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        uid = answer["response"]["uid"]
        return Probe(shaken - started, time.monotonic() - shaken, response.status, uid)
    finally:
        conn.close()
