"""HTTP framing errors answered with a 4xx naming the error, never a 5xx or a traceback.

gunicorn's parser raises its own exceptions when a chunked body is malformed (a chunk size that
is not hexadecimal, a chunk without its CRLF, a bad trailer line) or ends early. The app reads
the body, so they were raised through Flask: a 500 and a traceback. `FramedBody` turns them into
werkzeug's BadRequest, which the app answers like any unusable request (`{"error": ...}`, 400),
and marks the request so the connection is closed after the answer (where the next request
starts is unknown). Errors in the request line and headers are raised before the app runs;
gunicorn answered them itself (HTML, a transfer coding other than chunked as 501, its log line
quoting the header as sent). `answer_framing_error` answers them as JSON with a 4xx, and logs
one escaped line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from gunicorn.http.errors import (
    ConfigurationProblem,
    ExpectationFailed,
    InvalidResponseHeader,
    InvalidResponseHeaderName,
    LimitRequestHeaders,
    LimitRequestLine,
    NoMoreData,
    ParseException,
)
from gunicorn.util import write_nonblock
from werkzeug.exceptions import BadRequest

from webhook.logfields import field

FRAMING_ERRORS = (ParseException, NoMoreData)
# Raised by gunicorn but not the client's doing: gunicorn's own answer (a 500) stays.
NOT_THE_CLIENTS = (ConfigurationProblem, InvalidResponseHeader, InvalidResponseHeaderName)
STATUS = (
    (LimitRequestLine, 414, "URI Too Long"),
    (LimitRequestHeaders, 431, "Request Header Fields Too Large"),
    (ExpectationFailed, 417, "Expectation Failed"),
)
BAD_REQUEST = (400, "Bad Request")
MESSAGE_CHARS = 200  # what of the parser's message (it quotes the request) reaches the client


def describe(err: BaseException) -> str:
    """What was wrong with the request's framing, for the client and the log."""
    if isinstance(err, NoMoreData):
        return "request body ended before its last chunk"
    return f"malformed request: {type(err).__name__}: {str(err)[:MESSAGE_CHARS]}"


def is_framing_error(err: BaseException) -> bool:
    """An error in how the client framed its request line, headers or body."""
    return isinstance(err, FRAMING_ERRORS) and not isinstance(err, NOT_THE_CLIENTS)


def status_for(err: BaseException) -> tuple[int, str]:
    for kind, status, reason in STATUS:
        if isinstance(err, kind):
            return status, reason
    return BAD_REQUEST


class FramedBody:
    """gunicorn's request body as the app reads it: framing errors raise BadRequest (400)."""

    def __init__(self, body: Any, req: Any) -> None:
        self._body = body
        self._req = req

    def _failed(self, err: BaseException) -> BadRequest:
        self._req.must_close = True  # answered with "Connection: close", then closed
        return BadRequest(describe(err))

    def read(self, size: int | None = None) -> bytes:
        try:
            data: bytes = self._body.read(size)
        except FRAMING_ERRORS as err:
            raise self._failed(err) from None
        return data

    def readline(self, size: int | None = None) -> bytes:
        try:
            line: bytes = self._body.readline(size)
        except FRAMING_ERRORS as err:
            raise self._failed(err) from None
        return line

    def readlines(self, size: int | None = None) -> list[bytes]:
        return list(self._lines(size))

    def _lines(self, size: int | None) -> Iterator[bytes]:
        while line := self.readline(size):
            yield line

    def __iter__(self) -> Iterator[bytes]:
        return self._lines(None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._body, name)  # `failed`, read by gunicorn before keep-alive


def answer_framing_error(
    log: logging.Logger | Any, sock: Any, addr: Any, err: BaseException
) -> None:
    """A 4xx `{"error": ...}` with "Connection: close", and one escaped warning line."""
    message = describe(err)
    status, reason = status_for(err)
    log.warning(
        "invalid request from ip=%s status=%d: %s",
        field((addr or ("",))[0]),
        status,
        field(message),
    )
    body = json.dumps({"error": message}, separators=(",", ":")).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    try:
        write_nonblock(sock, head.encode("latin-1") + body)
    except OSError:
        log.debug("the client was gone before its answer was sent")
