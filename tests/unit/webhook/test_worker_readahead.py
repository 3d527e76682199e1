"""The worker reads a request ahead in its poller and hands it to a thread only once it is
complete (webhook/worker.py `is_complete`): for any head and any split of its body, exactly when
the head and the Content-Length body are in, or PREREAD_BYTES of the request; a chunked body or
a head the parser will refuse goes once the head is in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from webhook.worker import PREREAD_BYTES, is_complete

HEADERS = st.lists(
    st.sampled_from(["Host: x", "Content-Type: application/json", "X-A: b", "Accept: */*"]),
    max_size=4,
)


@given(HEADERS, st.integers(0, 40_000), st.integers(0, 40_000), st.sampled_from(["\r\n", "\n"]))
def test_a_request_is_complete_when_its_body_is_in_or_enough_of_it(
    headers: list[str], length: int, sent: int, eol: str
) -> None:
    head = eol.join(["POST /validate HTTP/1.1", *headers, f"Content-Length: {length}"]) + eol * 2
    data = head.encode() + b"x" * min(sent, length)
    assert is_complete(data) is (sent >= length or len(data) >= PREREAD_BYTES)


@given(HEADERS, st.integers(0, 200))
def test_a_head_not_yet_ended_waits_until_the_limit(headers: list[str], extra: int) -> None:
    data = "\r\n".join(["POST /validate HTTP/1.1", *headers, "X-Slow: " + "y" * extra]).encode()
    assert is_complete(data) is False
    assert is_complete(data + b"z" * PREREAD_BYTES) is True


def test_chunked_bodies_and_heads_the_parser_refuses_go_once_the_head_is_in() -> None:
    assert is_complete(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab") is True
    assert is_complete(b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
    assert is_complete(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n") is True
    assert is_complete(b"POST / HTTP/1.1\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n")
