"""The gunicorn worker: gthread, with every connection bounded in time and in requests.

gthread reads a request (TLS handshake, header lines, body) in a pool thread with no time
limit, so slow clients (a header line per second, a Content-Length larger than the body) held
every thread and nobody else was answered. This worker:

* gives reading a request, from its first byte to the last byte of its body, and the TLS
  handshake REQUEST_READ_SECONDS; a connection past it is treated as gone and closed;
* runs as many threads as it accepts connections (the connection limit), so an accepted
  connection never waits for a thread that a slow client holds;
* answers "Connection: close" to the first request on a connection older than
  CONNECTION_SECONDS: gthread leaves a kept-alive connection on the worker that accepted it,
  and reconnecting lets the kernel spread it again. The bound is in time, not in requests: with
  a bound of 100 requests, connections on the less busy worker reached it sooner, reconnected,
  and half of them landed on the busier worker, so load drifted onto one worker (13 of 47
  samples of 8 connections had 7 or 8 on one worker).
"""

from __future__ import annotations

import errno
import socket
import time
from typing import Any

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.gthread import TConn, ThreadWorker

REQUEST_READ_SECONDS = 5.0  # the API server's own webhook timeout is at most 5 s (webhooks.yaml)
CONNECTION_SECONDS = 1.0  # a TLS handshake a second per busy connection: about 0.2% of a core


class DeadlineReader:
    """The TLS socket as the HTTP parser sees it: reads of one request end by a deadline.

    A read past the deadline returns end-of-file, which gunicorn and Werkzeug already answer
    as a client that went away; the connection is then closed. Writes use the socket itself.
    """

    def __init__(self, sock: Any, seconds: float) -> None:
        self._sock = sock
        self._seconds = seconds
        self._deadline: float | None = None
        self.expired = False

    def begin_request(self) -> None:
        self._deadline = None

    def recv(self, size: int) -> bytes:
        if self.expired:
            return b""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self._seconds
        remaining = self._deadline - now
        previous = self._sock.gettimeout()
        if remaining <= 0:
            self.expired = True
            return b""
        self._sock.settimeout(remaining if previous is None else min(previous, remaining))
        try:
            data: bytes = self._sock.recv(size)
        except TimeoutError:
            self.expired = True
            return b""
        finally:
            self._sock.settimeout(previous)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class BoundedConn(TConn):  # type: ignore[misc]  # gunicorn ships no type hints
    """A connection whose TLS handshake and request reads are bounded by REQUEST_READ_SECONDS."""

    # Set by TConn.__init__ (declared here because gunicorn ships no type hints).
    cfg: Any
    sock: Any
    client: Any
    parser: Any
    initialized: bool
    reader: DeadlineReader
    opened = 0.0  # time.monotonic() when the connection was set up

    def init(self) -> None:
        if self.initialized:
            return
        self.initialized = True
        self.opened = time.monotonic()
        self.sock.settimeout(REQUEST_READ_SECONDS)
        if self.cfg.is_ssl:
            try:
                self.sock = gsock.ssl_wrap_socket(self.sock, self.cfg)
            except TimeoutError:
                raise NoMoreData(b"") from None  # gthread logs this at debug level
        self.reader = DeadlineReader(self.sock, REQUEST_READ_SECONDS)
        self.parser = http.get_parser(self.cfg, self.reader, self.client)


class BoundedThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """gthread with bounded reads, a thread per connection and bounded keep-alive."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Threads equal connections (see webhook/gunicorn_options.py), so gthread's default,
        # connections minus threads, would allow no kept-alive connection at all.
        self.max_keepalived = self.cfg.worker_connections

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        return None  # the base warning assumes connections beyond threads; see __init__

    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        if client_sock.family in (socket.AF_INET, socket.AF_INET6):
            client_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.enqueue_req(BoundedConn(self.cfg, client_sock, client_addr, listener.getsockname()))

    def handle(self, conn: BoundedConn) -> Any:
        if conn.initialized:
            conn.reader.begin_request()  # a new request on a kept-alive connection
        return super().handle(conn)

    def handle_request(self, req: Any, conn: BoundedConn) -> bool:
        if time.monotonic() - conn.opened >= CONNECTION_SECONDS or conn.reader.expired:
            req.must_close = True
        keep: bool = super().handle_request(req, conn)
        return keep and not conn.reader.expired
