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
* reads each request ahead in the main loop, without a thread: the socket is non-blocking and
  whatever has arrived is buffered, until the head and its Content-Length body are in (or
  PREREAD_BYTES of them, or the head of a chunked body); only then does a pool thread parse and
  answer it. A slow client (a header line a second, a body shorter than announced) therefore
  waits in the poller, costing a descriptor and its buffer, never a thread: 200 and 400 such
  clients, reconnecting, held every thread before (a normal client's p99 2.7 and 5.5 s);
* gives reading a request, from its first byte to the last byte of its body, READ_SECONDS; one
  still in the poller then is answered 408 and closed by the main loop (a send on a
  non-blocking socket, never waited for), one in a thread is treated as gone and closed;
* holds at most MAX_CONNECTIONS connections; at the limit a new one replaces the oldest idle one
  (no byte sent yet, then kept alive longest), so idle connections cannot lock others out;
* closes connections in the thread that served them, never on the main thread that accepts;
* answers malformed framing with 400 (webhook/framing.py);
* answers "Connection: close" to the first request on a connection older than
  CONNECTION_SECONDS: gthread leaves a kept-alive connection on the worker that accepted it,
  and reconnecting lets the kernel spread it again. The bound is in time, not in requests: with
  a bound of 100 requests, connections on the less busy worker reached it sooner, reconnected,
  and half of them landed on the busier worker, so load drifted onto one worker (13 of 47
  samples of 8 connections had 7 or 8 on one worker);
* answers "Connection: close" too while this worker serves more than an even share of all the
  workers' connections that send requests (webhook/balance.py): the kernel deals a new one at
  random, (6,2) of 8 as often as (4,4), and a worker holding six was bound by its GIL while
  the other waited; a connection dealt badly is dealt again until the spread is even.
"""

from __future__ import annotations

import contextlib
import errno
import re
import resource
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from functools import partial
from typing import Any

from gunicorn import http, util
from gunicorn import sock as gsock
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.balance import ConnectionShares
from webhook.framing import FramedBody, answer_framing_error, is_framing_error

READ_SECONDS = 5.0  # the API server's own webhook timeout is at most 5 s (webhooks.yaml)
HANDSHAKE_SECONDS = 5.0  # from accept to a completed TLS handshake
CONNECTION_SECONDS = 1.0  # a TLS handshake a second per busy connection: about 0.2% of a core
MAX_CONNECTIONS = 1000  # per worker, open at once (idle ones cost a descriptor, not a thread)
SPARE_DESCRIPTORS = 64  # files, the listener, the poller: never given to connections
LINGER_SECONDS = 1.0  # how long a served connection waits for the client to close first
# A request is read ahead in the main loop, without a thread, until its head and body are in
# (or this much of it is): a slow client then waits in the poller, not in a thread.
PREREAD_BYTES = 32 * 1024
ACCEPT_ERRORS = (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK)
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
CLOSED = object()  # handle()'s answer for a connection it has closed itself
WAIT = object()  # handle()'s answer for a connection to wait in the poller for its request
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LENGTH = re.compile(rb"\ncontent-length[ \t]*:[ \t]*([0-9]{1,19})[ \t]*\r?(?=\n)", re.IGNORECASE)
# a chunked body, or a client waiting for "100 Continue" before it sends its body
_HEAD_ONLY = re.compile(rb"\n(transfer-encoding|expect)[ \t]*:", re.IGNORECASE)
_LATE = b'{"error":"the request did not arrive within %g s"}\n' % READ_SECONDS
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
    + b"Content-Length: %d\r\n\r\n" % len(_LATE)
    + _LATE
)
NO_DATA_YET = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError)


def is_complete(buffer: bytes | bytearray) -> bool:
    """Whether a read-ahead request can go to a thread: its head and its Content-Length body
    are in, or PREREAD_BYTES of it (a bigger body, or a head the parser will refuse as too
    long, is read on in the thread, within the same deadline); a chunked body, an
    `Expect: 100-continue` (the client sends its body only when answered) or a head the parser
    will refuse goes once the head is in."""
    if len(buffer) >= PREREAD_BYTES:
        return True
    end = _HEAD_END.search(buffer)
    if end is None:
        return False
    head = bytes(buffer[: end.end()])
    if _HEAD_ONLY.search(head):
        return True
    lengths = _LENGTH.findall(head)
    if len(lengths) != 1:
        return True  # none (no body) or several (the parser answers 400)
    return len(buffer) - end.end() >= int(lengths[0])


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
        self.prefix = bytearray()  # read ahead in the main loop; handed out first

    def begin_request(self, started: float | None = None) -> None:
        """A new request; its deadline runs from `started` (its first byte, when read ahead),
        else from the first read."""
        self._deadline = None if started is None else started + self._seconds

    def recv(self, size: int) -> bytes:
        if self.prefix:
            ahead = bytes(self.prefix[:size])
            del self.prefix[:size]
            return ahead
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
    started: float | None = None  # time.monotonic() of the current request's first byte
    leaving = False  # answered "Connection: close" to spread the connections (balance.py)
    ahead: bytearray  # the current request as read ahead so far

    def read_ahead(self, *, readable: bool) -> bool | None:
        """Read what has arrived without waiting: True when the request can go to a thread
        (is_complete), False when more is to come, None when the client closed. The request
        starts at its first byte, or when the socket was `readable` (a TLS record not yet
        whole decrypts to nothing, yet its bytes started the request)."""
        self.sock.setblocking(False)
        if readable and self.started is None:
            self.started = time.monotonic()
        while len(self.ahead) < PREREAD_BYTES:
            try:
                data = self.sock.recv(PREREAD_BYTES - len(self.ahead))
            except NO_DATA_YET:
                break
            if not data:
                return None
            if self.started is None:
                self.started = time.monotonic()
            self.ahead += data
        return is_complete(self.ahead)

    def hand_over(self) -> None:
        """The read-ahead bytes to the parser's reader; the request's deadline from its first
        byte."""
        assert self.reader is not None
        self.reader.prefix += self.ahead
        self.ahead = bytearray()
        self.reader.begin_request(self.started)
        self.started = None

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
        self.reading_conns: deque[BoundedConn] = deque()  # requests being read ahead
        self.shares: ConnectionShares | None = None  # in the worker process (init_process)
        # connections told to close to even the spread, not yet closed: already counted out
        # (pool threads add, the main loop takes away)
        self.leaving = 0
        self.leaving_lock = threading.Lock()

    def init_process(self) -> None:
        # set by the master's pre_fork hook (webhook/balance.py), after __init__; absent under
        # a gunicorn configuration without the hook
        self.shares = getattr(self, "connection_shares", None)
        super().init_process()

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        super().wait_for_and_dispatch_events(timeout)
        if self.shares is not None:
            self.shares.publish(self.serving())

    def serving(self) -> int:
        """The connections that count for the spread: those that have sent a whole request,
        less those told to close. One waiting for its handshake or its first byte, or still
        sending its request (a slow client), is not counted, so that idle or slow connections
        never make a worker close its clients' connections."""
        return self.nr_conns - len(self.pending_conns) - len(self.reading_conns) - self.leaving

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
        conn.ahead = bytearray()
        conn.accepted = time.monotonic()
        conn.timeout = conn.accepted + HANDSHAKE_SECONDS  # murder_pending closes it then
        self.pending_conns.append(conn)
        self.poller.register(
            conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def evict_idle(self) -> bool:
        """Close the oldest connection that has sent nothing yet, else the one kept alive
        longest; False when every connection is being served."""
        for idle in (self.pending_conns, self.reading_conns, self.keepalived_conns):
            if idle:
                conn = idle.popleft()
                self.poller.unregister(conn.sock)
                self.nr_conns -= 1
                util.close(conn.sock)
                return True
        return False

    def handle(self, conn: BoundedConn) -> Any:
        """In a pool thread: the TLS handshake of a new connection, then the request, once it
        has been read ahead (else WAIT: back to the poller, without a thread)."""
        if not conn.initialized:
            early = self.handshake(conn)
            if early is not None:
                return early
        buffered = conn.parser is not None and conn.parser.unreader.buf.getvalue()
        if not buffered:  # a pipelined request the parser holds already is complete
            try:
                state = conn.read_ahead(readable=False)
            except OSError:  # ssl.SSLError too: a reset, a bad record
                state = None
            if state is None:
                util.close(conn.sock)
                return CLOSED
            if not state:
                return WAIT
        conn.hand_over()
        keep = super().handle(conn)
        if keep is True:
            return keep
        conn.shut()
        return CLOSED

    def handshake(self, conn: BoundedConn) -> object | None:
        """The TLS handshake of a new connection; CLOSED when it failed."""
        try:
            conn.sock.setblocking(True)
            conn.init()
        except (NoMoreData, OSError) as err:  # ssl.SSLError is an OSError
            self.log.debug("TLS handshake not completed: %s", err)
            conn.shut()
            return CLOSED
        return None

    def finish_request(self, conn: BoundedConn, fs: Any) -> None:
        result = None if fs.cancelled() or fs.exception() is not None else fs.result()
        if conn.leaving:  # its answer is written: closed now, or being closed
            conn.leaving = False
            with self.leaving_lock:
                self.leaving -= 1
        if result is CLOSED:
            self.nr_conns -= 1  # closed by the thread that served it
        elif result is WAIT and self.alive:
            self.wait_for_request(conn)
        elif result is WAIT:
            self.nr_conns -= 1
            util.close(conn.sock)
        else:
            super().finish_request(conn, fs)

    # --- reading ahead in the main loop -----------------------------------------------------

    def on_client_socket_readable(self, conn: BoundedConn, client: Any) -> None:
        """A kept-alive connection's next request begins: read it ahead here."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self.read_ahead(conn)

    def on_pending_socket_readable(self, conn: BoundedConn, client: Any) -> None:
        """A new connection's first byte (its handshake goes to a thread), or the first byte of
        the request of one that has shaken hands (read ahead here)."""
        if not conn.initialized:
            super().on_pending_socket_readable(conn, client)
            return
        self.poller.unregister(client)
        self.pending_conns.remove(conn)
        self.read_ahead(conn)

    def on_reading_socket_readable(self, conn: BoundedConn, client: Any) -> None:
        state = self._read_more(conn)
        if state is False:
            return  # stays registered, until complete or its deadline
        self.poller.unregister(client)
        self.reading_conns.remove(conn)
        self._after_reading(conn, state)

    def read_ahead(self, conn: BoundedConn) -> None:
        """Read what has arrived (`conn` is in no queue and not registered): to a thread when
        complete, closed when the client went, else registered to wait for more."""
        state = self._read_more(conn)
        if state is False:
            self.wait_for_request(conn)
        else:
            self._after_reading(conn, state)

    def wait_for_request(self, conn: BoundedConn) -> None:
        """Into the poller until the request is in: before its first byte among the pending
        connections (READ_SECONDS from now), after it among the reading ones (READ_SECONDS
        from that byte: the same deadline the thread's reads have)."""
        conn.sock.setblocking(False)
        conn.data_ready = False
        if conn.started is None:
            conn.timeout = time.monotonic() + READ_SECONDS  # murder_pending closes it then
            self.pending_conns.append(conn)
            callback = self.on_pending_socket_readable
        else:
            conn.timeout = conn.started + READ_SECONDS  # murder_reading closes it then
            self.reading_conns.append(conn)
            callback = self.on_reading_socket_readable
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(callback, conn))

    @staticmethod
    def _read_more(conn: BoundedConn) -> bool | None:
        try:
            return conn.read_ahead(readable=True)
        except OSError:  # ssl.SSLError too: a reset, a bad record
            return None

    def _after_reading(self, conn: BoundedConn, state: bool | None) -> None:
        if state is None:
            self.nr_conns -= 1
            util.close(conn.sock)
        else:
            conn.data_ready = True
            self.enqueue_req(conn)

    def murder_pending(self) -> None:
        super().murder_pending()
        self.murder_reading()

    def murder_reading(self) -> None:
        """Close the connections whose request is not in READ_SECONDS after its first byte
        (slow clients: a header line a second, a body shorter than announced)."""
        now = time.monotonic()
        while self.reading_conns and (self.reading_conns[0].timeout or 0.0) <= now:
            conn = self.reading_conns.popleft()
            self.poller.unregister(conn.sock)
            self.nr_conns -= 1
            if conn.ahead:
                # a small answer on a non-blocking socket, never waited for; a client that is
                # gone or reads nothing is closed all the same
                with contextlib.suppress(OSError):
                    conn.sock.send(TIMED_OUT)
            util.close(conn.sock)

    def handle_request(self, req: Any, conn: BoundedConn) -> bool:
        assert conn.reader is not None  # set by init(), which handle() runs first
        if time.monotonic() - conn.opened >= CONNECTION_SECONDS or conn.reader.expired:
            req.must_close = True
        elif self.shares is not None and self.shares.over_share(self.serving()):
            # more than an even share of the workers' connections: this one is dealt again
            req.must_close = conn.leaving = True
            with self.leaving_lock:
                self.leaving += 1
        req.body = FramedBody(req.body, req)  # a malformed body is a 400, not a 500
        keep: bool = super().handle_request(req, conn)
        return keep and not conn.reader.expired

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if is_framing_error(exc):
            answer_framing_error(self.log, client, addr, exc)
            return
        super().handle_error(req, client, addr, exc)
