"""HTTP framing errors answered with a 400 naming the error, never a 5xx or a traceback.

gunicorn's parser raises its own exceptions when a chunked body is malformed (a chunk size that
is not hexadecimal, a chunk without its CRLF, a bad trailer line) or ends early. The app reads
the body, so they were raised through Flask: a 500 and a traceback. `FramedBody` turns them into
werkzeug's BadRequest, which the app answers like any unusable request (`{"error": ...}`, 400),
and marks the request so the connection is closed after the answer (where the next request
starts is unknown). A transfer coding other than chunked (`xchunked`) is refused by gunicorn
before the app runs, as 501; `answer_framing_error` answers it 400 like the rest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from gunicorn.http.errors import NoMoreData, ParseException, UnsupportedTransferCoding
from gunicorn.util import write_nonblock
from werkzeug.exceptions import BadRequest

from webhook.logfields import field

FRAMING_ERRORS = (ParseException, NoMoreData)
BAD_REQUEST = 400


def describe(err: BaseException) -> str:
    """What was wrong with the request's framing, for the client and the log."""
    if isinstance(err, NoMoreData):
        return "request body ended before its last chunk"
    return f"malformed request: {type(err).__name__}: {err}"


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


def is_framing_error(err: BaseException) -> bool:
    """Errors gunicorn answers itself with a 5xx although the client framed the request wrong."""
    return isinstance(err, UnsupportedTransferCoding)


def answer_framing_error(
    log: logging.Logger | Any, sock: Any, addr: Any, err: BaseException
) -> None:
    """A 400 `{"error": ...}` with "Connection: close", and one warning line."""
    message = describe(err)
    log.warning("invalid request from ip=%s: %s", field((addr or ("",))[0]), field(message))
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {BAD_REQUEST} Bad Request\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    try:
        write_nonblock(sock, head.encode("latin-1") + body)
    except OSError:
        log.debug("the client was gone before its 400 was sent")
