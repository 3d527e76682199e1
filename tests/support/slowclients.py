"""Slow and broken clients against the real webhook (loopback, bounded in count and time)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SEND_EVERY = 1.0  # seconds between header lines


@dataclass
class SlowClients:
    """`count` TLS connections, half sending one header line per second, half announcing a
    larger body than they send; `seconds` bounds the whole attack. With `sustain`, each one
    reconnects when the server ends it, until `seconds` are up."""

    port: int
    context: ssl.SSLContext
    count: int = 50
    seconds: float = 12.0
    sustain: bool = False
    started: threading.Event = field(default_factory=threading.Event)
    endings: list[bytes] = field(default_factory=list)  # what each connection finally read
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _opened: int = 0
    _until: float = 0.0

    def start(self) -> None:
        self._until = time.monotonic() + self.seconds
        for i in range(self.count):
            target = self._dribble_headers if i % 2 == 0 else self._short_body
            thread = threading.Thread(target=self._run, args=(target,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def wait_started(self, timeout: float = 30) -> bool:
        return self.started.wait(timeout)

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=self.seconds + 30)

    def _run(self, attack: Callable[[], None]) -> None:
        attack()
        while self.sustain and time.monotonic() < self._until - 1:
            try:
                attack()
            except OSError:
                self._ended(b"refused")

    def _connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.seconds)
        conn = self.context.wrap_socket(raw, server_hostname="runway-webhook.runway-system.svc")
        with self._lock:
            self._opened += 1
            if self._opened == self.count:
                self.started.set()
        return conn

    def _dribble_headers(self) -> None:
        deadline = self._until
        with self._connect() as conn:
            try:
                conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")
                i = 0
                while time.monotonic() < deadline:
                    conn.sendall(f"X-Slow-{i}: y\r\n".encode())
                    i += 1
                    conn.settimeout(SEND_EVERY)
                    try:
                        if conn.recv(65536) == b"":
                            self._ended(b"closed")
                            return
                    except TimeoutError:
                        continue
            except OSError:
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
