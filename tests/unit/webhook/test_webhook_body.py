"""The webhook reads an admission's body (webhook.app._body) as werkzeug's limited stream reads
it: the same bytes, or the same refusal past the limit, over generated bodies, limits (at least
a byte: the settings allow 1 KiB and up), lengths declared or not (a chunked body has none:
werkzeug reads it up to the limit), from a stream the server ends where the body ends (gunicorn:
wsgi.input_terminated) or one that holds more (the next request: read up to the length)."""

from __future__ import annotations

import io
from typing import Any

from flask import Flask, request
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.exceptions import HTTPException

from webhook.app import _body


def _read(app: Flask, environ: dict[str, Any], how: Any) -> tuple[str, Any]:
    with app.request_context(dict(environ)):
        try:
            return "read", how()
        except HTTPException as err:
            return "refused", err.code


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=300),
    after=st.binary(max_size=20),
    limit=st.integers(1, 320),
    declared=st.booleans(),
    terminated=st.booleans(),
)
def test_the_body_is_what_werkzeug_reads(
    body: bytes, after: bytes, limit: int, declared: bool, terminated: bool
) -> None:
    app = Flask("t")
    app.config["MAX_CONTENT_LENGTH"] = limit
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/mutate",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "443",
        "wsgi.url_scheme": "https",
        "CONTENT_TYPE": "application/json",
    }
    if declared:
        environ["CONTENT_LENGTH"] = str(len(body))
    if terminated:  # gunicorn says it ends the stream where the body ends
        environ["wsgi.input_terminated"] = True
        after = b""
    ours = _read(app, environ | {"wsgi.input": io.BytesIO(body + after)}, _body)

    def werkzeug() -> bytes:
        return request.get_data(cache=False)

    theirs = _read(app, environ | {"wsgi.input": io.BytesIO(body + after)}, werkzeug)
    assert ours == theirs
    if declared and len(body) <= limit:
        assert ours == ("read", body)
