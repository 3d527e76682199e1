"""A small client for LiteLLM's management API: POST /model/new, /model/update, /model/delete,
GET /model/info and /v1/models, authenticated with the master key as a Bearer token.

Response bodies of writes are never logged or put in an exception (a validation error could echo
the request, which holds the provider key); errors carry the route and the HTTP status only.

Redirects are never followed: the master key would go with the request to wherever LiteLLM (or
anything in front of it) points.

Connections are kept alive and reused (issue #46: a pass of 1,000 writes paid a TCP connect for
each): a connection goes back to the client's pool only after an answer read whole that did not
say Connection: close, an idle one is dropped after KEEP_IDLE seconds (uvicorn, which serves
LiteLLM, closes idle ones after 5 s), and a request that finds its reused connection closed by
LiteLLM before any answer began is sent once more on a new one (a closed idle connection; were
it a write LiteLLM did take, the second answers an error, and the sync re-checks every failed
write in /model/info). Threads may share one client: each exchange holds its connection alone.

Every exchange is bounded as a whole (issue #40, items 9 and 14): it must end within `timeout`
seconds in total (a watchdog shuts the socket down at the deadline, so a LiteLLM that trickles
its headers or body one byte at a time cannot hold a pass), and an answer is read in chunks up
to MAX_PARSED bytes (MAX_ANSWER for the /model/info listing), refused past it. The caps are
sized from the memory of a sync reading answers near them (docs/gateway.md, "Memory"): parsed
whole, JSON takes up to ~20 times its size, so other answers stay at 4 MiB; /model/info is
decoded one entry at a time (gateway/listing.py), each entry reduced at once to the fields the
sync reads (model_name a string or None; litellm_params model and api_base; model_info id, mode
and the runway_* fields; at most listing.MAX_ENTRIES of them), entries with neither a name nor
an id dropped, so no answer shape or nesting depth can raise anything but LiteLLMUnavailable.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from core.fields.errors import Unavailable
from gateway import listing

TIMEOUT = 30.0  # seconds for a whole exchange: connect, request, headers and the whole answer
# Bytes of a /model/info listing, decoded one entry at a time (gateway/listing.py): LiteLLM
# 1.108.7 answers about 8 KiB per deployment, so about 2,000 deployments.
MAX_ANSWER = 16 * 2**20
MAX_PARSED = 4 * 2**20  # bytes of any other answer, parsed whole (/v1/models: ~80 B a name)
MAX_WRITE_ANSWER = 2**16  # bytes of a write's answer read (and dropped)
CHUNK = 2**16
KEEP_IDLE = 2.0  # seconds an idle kept-alive connection is reused (uvicorn closes them at 5 s)
# A reused connection LiteLLM closed while it was idle: the request never reached a handler.
STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
# What the sync reads of an entry of /model/info; everything else is dropped as it is read.
PARAM_KEYS = ("model", "api_base")
INFO_KEYS = ("id", "mode", "runway_managed_by", "runway_owner", "requested_by")


class LiteLLMUnavailable(Unavailable):
    """LiteLLM could not be reached or answered something that is not the management API."""


class NoLookup(LiteLLMUnavailable):
    """GET /model/info?litellm_model_id=ID answered 404: no such route here (LiteLLM answers an
    unknown id with 400), so entries are to be found in the whole listing instead."""


@dataclass(frozen=True)
class WriteFailed(Exception):
    """A management write answered an error status (the body is deliberately not kept)."""

    route: str
    status: int

    def __str__(self) -> str:
        return f"{self.route} answered HTTP {self.status}"


@dataclass
class LiteLLM:
    url: str  # e.g. http://litellm.gateway.svc:4000
    master_key: str = field(repr=False)
    timeout: float = TIMEOUT
    _idle: list[tuple[http.client.HTTPConnection, float]] = field(
        default_factory=list, repr=False, compare=False
    )  # kept-alive connections and when each went idle
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def model_info(self) -> list[dict[str, Any]]:
        """Every deployment LiteLLM routes to (config and DB entries alike), each reduced to
        model_name (str or None), litellm_params and model_info (dicts) as it is decoded."""
        return self._entries("/model/info", MAX_ANSWER)

    def public_models(self) -> set[str]:
        """The names /v1/models offers (what a client sees as routable)."""
        data = self._get("/v1/models").get("data")
        if not isinstance(data, list):
            raise LiteLLMUnavailable(f"{self.url}/v1/models: no data list in the answer")
        return {m["id"] for m in data if isinstance(m, Mapping) and isinstance(m.get("id"), str)}

    def deployment(self, model_id: str) -> dict[str, Any] | None:
        """The entry with model_info.id `model_id`, reduced as model_info() reduces, or None when
        LiteLLM has none: GET /model/info?litellm_model_id=ID, LiteLLM's lookup of one deployment
        by id in its router (400 when there is none; NoLookup for a 404, no such route). An answer
        listing other entries too (a LiteLLM that ignores the parameter lists them all) is
        searched for the id."""
        route = "/model/info?" + urllib.parse.urlencode({"litellm_model_id": model_id})
        found = self._entries(route, MAX_PARSED, absent=True)
        return next((e for e in found if e["model_info"].get("id") == model_id), None)

    def new(self, body: Mapping[str, Any]) -> None:
        self._post("/model/new", body)

    def update(self, body: Mapping[str, Any]) -> None:
        self._post("/model/update", body)

    def delete(self, model_id: str) -> None:
        self._post("/model/delete", {"id": model_id})

    def _get(self, route: str) -> dict[str, Any]:
        raw = self._answer(route, MAX_PARSED)
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not JSON") from None
        finally:
            del raw
        if not isinstance(answer, dict):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not a JSON object")
        return answer

    def _entries(self, route: str, limit: int, *, absent: bool = False) -> list[dict[str, Any]]:
        """The reduced entries of a /model/info answer, decoded one at a time (gateway.listing);
        with `absent`, none for a 400 (LiteLLM's answer for an unknown id) and NoLookup for a
        404."""
        raw = self._answer(route, limit, absent=absent)
        if raw is None:
            return []
        try:
            return listing.entries(raw.decode(), _entry)
        except listing.NotAnObject:
            raise LiteLLMUnavailable(
                f"{self.url}{route}: the answer is not a JSON object"
            ) from None
        except listing.NoDataList:
            raise LiteLLMUnavailable(f"{self.url}{route}: no data list in the answer") from None
        except listing.TooMany:
            many = f"more than {listing.MAX_ENTRIES} entries in the answer"
            raise LiteLLMUnavailable(f"{self.url}{route}: {many}") from None
        except (ValueError, RecursionError):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not JSON") from None

    @overload
    def _answer(self, route: str, limit: int) -> bytes: ...

    @overload
    def _answer(self, route: str, limit: int, *, absent: bool) -> bytes | None: ...

    def _answer(self, route: str, limit: int, *, absent: bool = False) -> bytes | None:
        """The body of a 2xx answer of at most `limit` bytes, else LiteLLMUnavailable naming
        why; with `absent`, None for a 400 and NoLookup for a 404."""
        status, raw = self._exchange(route, None, limit)
        if absent and status == 400:
            return None
        if absent and status == 404:
            raise NoLookup(f"{self.url}{route} answered HTTP 404")
        if not 200 <= status < 300:
            raise LiteLLMUnavailable(f"{self.url}{route} answered {_status(status)}")
        if len(raw) > limit:
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer exceeds {limit} bytes")
        return raw

    def _post(self, route: str, body: Mapping[str, Any]) -> None:
        status, _ = self._exchange(route, body, MAX_WRITE_ANSWER)
        if not 200 <= status < 300:
            raise WriteFailed(route, status)

    def _exchange(
        self, route: str, body: Mapping[str, Any] | None, limit: int
    ) -> tuple[int, bytes]:
        """The status and the answer (at most `limit` + 1 bytes) of one request, all of it within
        `self.timeout` seconds; LiteLLMUnavailable when it cannot be had."""
        target = urllib.parse.urlsplit(self.url.rstrip("/") + route)
        headers = {"Authorization": f"Bearer {self.master_key}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        path = f"{target.path}?{target.query}" if target.query else target.path
        request = ("GET" if body is None else "POST", path, data, headers)
        deadline = time.monotonic() + self.timeout
        for reused in (True, False):
            connection = self._idle_connection() if reused else self._new_connection(target, route)
            if connection is None:
                continue
            try:
                return self._send(connection, request, limit, deadline)
            except _Stale as stale:
                if reused:
                    continue  # LiteLLM closed it while idle: once more on a new connection
                reason = _reason(stale.__cause__ or stale)
                raise LiteLLMUnavailable(f"{self.url}{route}: {reason}") from None
            except _Late:
                raise LiteLLMUnavailable(self._late(route)) from None
            except (OSError, http.client.HTTPException, ValueError) as err:
                raise LiteLLMUnavailable(f"{self.url}{route}: {_reason(err)}") from None
        raise AssertionError("unreachable: a new connection answers or raises")

    def _idle_connection(self) -> http.client.HTTPConnection | None:
        """The most recently used idle connection, if it went idle less than KEEP_IDLE ago."""
        now = time.monotonic()
        with self._lock:
            while self._idle:
                connection, since = self._idle.pop()
                if now - since < KEEP_IDLE:
                    return connection
                connection.close()
        return None

    def _new_connection(
        self, target: urllib.parse.SplitResult, route: str
    ) -> http.client.HTTPConnection:
        kind = (
            http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        )
        try:
            return kind(target.hostname or "", target.port, timeout=self.timeout)
        except ValueError as err:  # a port that is not a number
            raise LiteLLMUnavailable(f"{self.url}{route}: {err}") from None

    def _send(
        self,
        connection: http.client.HTTPConnection,
        request: tuple[str, str, bytes | None, dict[str, str]],
        limit: int,
        deadline: float,
    ) -> tuple[int, bytes]:
        """One exchange on `connection`, which goes back to the pool when it can carry another."""
        keep = False
        watchdog: _Watchdog | None = None
        try:
            if connection.sock is None:
                connection.connect()  # within the timeout; the watchdog needs the socket
            watchdog = _Watchdog(connection.sock, deadline - time.monotonic())
            method, path, data, headers = request
            try:
                connection.request(method, path, body=data, headers=headers)
                answer = connection.getresponse()
            except STALE as err:
                raise _Stale from err
            raw = _read(answer, limit, watchdog)
            keep = not answer.will_close and len(raw) <= limit and answer.length in (None, 0)
            answer.close()
            return answer.status, raw
        except (OSError, http.client.HTTPException, ValueError):
            if watchdog is not None and watchdog.fired.is_set():
                raise _Late from None
            raise
        finally:
            if watchdog is not None:
                watchdog.cancel()
            keep = keep and watchdog is not None and not watchdog.fired.is_set()
            if keep:
                with self._lock:
                    self._idle.append((connection, time.monotonic()))
            else:
                connection.close()

    def _late(self, route: str) -> str:
        return f"{self.url}{route}: no whole answer within {self.timeout:g} s"


class _Stale(Exception):
    """A reused connection found closed before any answer began."""


class _Late(Exception):
    """The watchdog cut the exchange at its deadline."""


@dataclass
class _Watchdog:
    """Shuts a socket down after `timeout` seconds: a blocked read on it then ends. (It holds the
    socket itself: http.client drops its own reference when an answer says Connection: close.)"""

    sock: socket.socket
    timeout: float
    fired: threading.Event = field(default_factory=threading.Event)
    _timer: threading.Timer | None = None

    def __post_init__(self) -> None:
        self._timer = threading.Timer(max(0.0, self.timeout), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired.set()
        with contextlib.suppress(OSError):  # already closed
            self.sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _read(answer: http.client.HTTPResponse, limit: int, watchdog: _Watchdog) -> bytes:
    """The answer's body in chunks, at most `limit` + 1 bytes (one more says: too long)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = answer.read1(min(CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if watchdog.fired.is_set():  # the socket was cut: what was read is not the whole answer
        raise TimeoutError
    return b"".join(chunks)


def _reason(err: BaseException) -> str:
    return str(err) or type(err).__name__


def _status(code: int) -> str:
    if 300 <= code < 400:
        return f"HTTP {code} (a redirect: never followed, it would carry the master key)"
    return f"HTTP {code}"


def _entry(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields the sync reads of one entry, or None when it has neither a name nor an id."""
    name = raw.get("model_name")
    params = _pick(raw.get("litellm_params"), PARAM_KEYS)
    info = _pick(raw.get("model_info"), INFO_KEYS)
    if not isinstance(name, str) and info.get("id") is None:
        return None
    return {
        "model_name": name if isinstance(name, str) else None,
        "litellm_params": params,
        "model_info": info,
    }


def _pick(value: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {k: value[k] for k in keys if k in value}
