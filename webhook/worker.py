"""The gunicorn worker: gthread, with every connection bounded in time and in requests.

gthread reads a request (TLS handshake, header lines, body) in a pool thread with no time
limit, lets a connection that has sent nothing wait for its first byte for 125 s, and closes a
connection on the worker's main thread, lingering up to 2 s for the client to close first. Slow
clients (a header line per second, a Content-Length larger than the body) then held every
thread, idle ones (no TLS ClientHello) every connection slot, and each close of a client that
kept sending stalled the accept loop: a new client's handshake waited 19-37 s (docs/security.md). This worker:

* keeps a new connection off the thread pool until it sends its first byte (it waits in the
  main loop's poller, costing a file descriptor), and closes it when its TLS handshake has not
  completed HANDSHAKE_SECONDS after it was accepted; after the handshake it waits there again,
  READ_SECONDS at most, until its request begins;
* gives reading a request, from its first byte to the last byte of its body, READ_SECONDS; a
  connection past it is treated as gone and closed;
* holds at most MAX_CONNECTIONS connections; at the limit a new one replaces the oldest idle one
  (no byte sent yet, then kept alive longest), so idle connections cannot lock others out;
* closes connections in the thread that served them, never on the main thread that accepts;
* answers malformed framing with 400 (webhook/framing.py);
* answers "Connection: close" to the first request on a connection older than
  CONNECTION_SECONDS: gthread leaves a kept-alive connection on the worker that accepted it,
  and reconnecting lets the kernel spread it again. The bound is in time, not in requests: with
  a bound of 100 requests, connections on the less busy worker reached it sooner, reconnected,
  and half of them landed on the busier worker, so load drifted onto one worker (13 of 47
  samples of 8 connections had 7 or 8 on one worker).
"""

from __future__ import annotations

import errno
import resource
import select
import selectors
import socket
import time
from collections import deque
from functools import partial
from typing import Any

from gunicorn import http, util
from gunicorn import sock as gsock
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.framing import FramedBody, answer_framing_error, is_framing_error

READ_SECONDS = 5.0  # the API server's own webhook timeout is at most 5 s (webhooks.yaml)
HANDSHAKE_SECONDS = 5.0  # from accept to a completed TLS handshake
CONNECTION_SECONDS = 1.0  # a TLS handshake a second per busy connection: about 0.2% of a core
MAX_CONNECTIONS = 1000  # per worker, open at once (idle ones cost a descriptor, not a thread)
SPARE_DESCRIPTORS = 64  # files, the listener, the poller: never given to connections
LINGER_SECONDS = 1.0  # how long a served connection waits for the client to close first
ACCEPT_ERRORS = (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK)
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
CLOSED = object()  # handle()'s answer for a connection it has closed itself
WAIT = object()  # handle()'s answer for a connection to wait in the poller for its request


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
    """A connection whose TLS handshake ends HANDSHAKE_SECONDS after accept and whose request
    reads are bounded by READ_SECONDS."""

    # Set by TConn.__init__ (declared here because gunicorn ships no type hints).
    cfg: Any
    sock: Any
    client: Any
    parser: Any
    initialized: bool
    timeout: float | None
    reader: DeadlineReader | None = None
    accepted = 0.0  # time.monotonic() at accept
    opened = 0.0  # time.monotonic() when the handshake was done

    def init(self) -> None:
        if self.initialized:
            return
        self.initialized = True
        remaining = self.accepted + HANDSHAKE_SECONDS - time.monotonic()
        if remaining <= 0:
            raise NoMoreData(b"")  # gthread logs this at debug level
        # One deadline for the whole handshake: CPython's do_handshake waits at most the socket
        # timeout in total, however slowly the client sends its ClientHello.
        self.sock.settimeout(remaining)
        if self.cfg.is_ssl:
            try:
                self.sock = gsock.ssl_wrap_socket(self.sock, self.cfg)
                self.sock.do_handshake()
            except TimeoutError:
                raise NoMoreData(b"") from None
        self.sock.settimeout(READ_SECONDS)
        self.opened = time.monotonic()
        self.reader = DeadlineReader(self.sock, READ_SECONDS)
        self.parser = http.get_parser(self.cfg, self.reader, self.client)

    def shut(self) -> None:
        """Close from the thread that served it: at once when the client is gone or never
        finished its handshake, else after waiting briefly for the client to close first (so
        unread bytes do not make the kernel reset the answer away)."""
        if self.reader is None or self.reader.expired:
            util.close(self.sock)
        else:
            self.sock.setblocking(True)
            util.close_graceful(self.sock, timeout=LINGER_SECONDS)


def connection_limit(wanted: int) -> int:
    """`wanted`, or fewer when the process may not open that many descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - SPARE_DESCRIPTORS))


class BoundedThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """gthread with bounded handshakes and reads, idle connections off the threads, eviction of
    the oldest idle connection at the limit, closing off the main thread, bounded keep-alive."""

    # Set by ThreadWorker.__init__ (declared here because gunicorn ships no type hints).
    cfg: Any
    log: Any
    poller: Any
    nr_conns: int
    pending_conns: deque[BoundedConn]
    keepalived_conns: deque[BoundedConn]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = connection_limit(self.cfg.worker_connections)
        # gthread stops accepting at worker_connections; this worker accepts always and makes
        # room itself (see accept), so that idle connections cannot stop it.
        self.worker_connections = self.limit + 1
        self.max_keepalived = self.limit

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        return None  # the base warning assumes connections beyond threads; see __init__

    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as err:
            if err.errno in OUT_OF_DESCRIPTORS:
                self.evict_idle()
                return
            if err.errno not in ACCEPT_ERRORS:
                raise
            return
        if self.nr_conns >= self.limit and not self.evict_idle():
            util.close(client_sock)  # every connection is being served: shed this one
            return
        self.nr_conns += 1
        if client_sock.family in (socket.AF_INET, socket.AF_INET6):
            client_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = BoundedConn(self.cfg, client_sock, client_addr, listener.getsockname())
        conn.accepted = time.monotonic()
        conn.timeout = conn.accepted + HANDSHAKE_SECONDS  # murder_pending closes it then
        self.pending_conns.append(conn)
        self.poller.register(
            conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def evict_idle(self) -> bool:
        """Close the oldest connection that has sent nothing yet, else the one kept alive
        longest; False when every connection is being served."""
        for idle in (self.pending_conns, self.keepalived_conns):
            if idle:
                conn = idle.popleft()
                self.poller.unregister(conn.sock)
                self.nr_conns -= 1
                util.close(conn.sock)
                return True
        return False

    def handle(self, conn: BoundedConn) -> Any:
        if not conn.initialized:
            early = self.handshake(conn)
            if early is not None:
                return early
        elif conn.reader is not None:
            conn.reader.begin_request()  # a new request on a kept-alive connection
        keep = super().handle(conn)
        if keep is True:
            return keep
        conn.shut()
        return CLOSED

    def handshake(self, conn: BoundedConn) -> object | None:
        """The TLS handshake of a new connection; CLOSED when it failed, WAIT when the client
        has sent no request yet (it then waits in the poller, not in this thread)."""
        try:
            conn.sock.setblocking(True)
            conn.init()
        except (NoMoreData, OSError) as err:  # ssl.SSLError is an OSError
            self.log.debug("TLS handshake not completed: %s", err)
            conn.shut()
            return CLOSED
        if conn.sock.pending() or select.select([conn.sock], [], [], 0)[0]:
            return None
        return WAIT

    def finish_request(self, conn: BoundedConn, fs: Any) -> None:
        result = None if fs.cancelled() or fs.exception() is not None else fs.result()
        if result is CLOSED:
            self.nr_conns -= 1  # closed by the thread that served it
        elif result is WAIT and self.alive:
            conn.sock.setblocking(False)
            conn.timeout = time.monotonic() + READ_SECONDS  # murder_pending closes it then
            conn.data_ready = False
            self.pending_conns.append(conn)
            self.poller.register(
                conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
            )
        elif result is WAIT:
            self.nr_conns -= 1
            util.close(conn.sock)
        else:
            super().finish_request(conn, fs)

    def handle_request(self, req: Any, conn: BoundedConn) -> bool:
        assert conn.reader is not None  # set by init(), which handle() runs first
        if time.monotonic() - conn.opened >= CONNECTION_SECONDS or conn.reader.expired:
            req.must_close = True
        req.body = FramedBody(req.body, req)  # a malformed body is a 400, not a 500
        keep: bool = super().handle_request(req, conn)
        return keep and not conn.reader.expired

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if is_framing_error(exc):
            answer_framing_error(self.log, client, addr, exc)
            return
        super().handle_error(req, client, addr, exc)
