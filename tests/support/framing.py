"""Generated HTTP/1.1 framings of one POST: chunked bodies, valid and with one defect each."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

NOT_HEX = "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ+-_!@#%^&*()<>"
TOKEN = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class Framing:
    """Bytes of one request; `error` the parser's error the defect causes (None: valid)."""

    data: bytes
    defect: str
    error: str | None


def _head(path: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: runway-webhook", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _splits(body: bytes) -> st.SearchStrategy[list[bytes]]:
    """`body` cut into 1 to 8 non-empty chunks."""
    cuts = st.lists(st.integers(1, max(len(body) - 1, 1)), max_size=7, unique=True)
    return cuts.map(lambda at: _cut(body, sorted(at)))


def _cut(body: bytes, at: list[int]) -> list[bytes]:
    return [body[i:j] for i, j in zip([0, *at], [*at, None], strict=True)]


def _encode(chunks: list[bytes], extensions: list[str], trailers: list[str]) -> bytes:
    out = b""
    for i, chunk in enumerate(chunks):
        ext = extensions[i % len(extensions)] if extensions else ""
        out += f"{len(chunk):x}{ext}\r\n".encode() + chunk + b"\r\n"
    return out + b"0\r\n" + "".join(f"{t}\r\n" for t in trailers).encode() + b"\r\n"


EXTENSIONS = st.lists(st.from_regex(r";[a-z]{1,6}(=[a-z0-9]{1,6})?", fullmatch=True), max_size=3)
TRAILERS = st.lists(st.from_regex(r"X-[A-Za-z]{1,8}: [a-z0-9]{0,8}", fullmatch=True), max_size=2)
TE = [("Transfer-Encoding", "chunked")]


def valid_chunked(path: str, body: bytes) -> st.SearchStrategy[Framing]:
    """`body` chunked any way: split anywhere, with chunk extensions and trailer fields."""
    return st.builds(
        lambda chunks, ext, trailers: Framing(
            _head(path, TE) + _encode(chunks, ext, trailers), "valid", None
        ),
        _splits(body),
        EXTENSIONS,
        TRAILERS,
    )


def malformed_chunked(path: str, body: bytes) -> st.SearchStrategy[Framing]:
    """`body` chunked with exactly one defect, each named with the error it must produce."""
    chunks = _splits(body)
    return st.one_of(
        st.builds(_not_hex, st.just(path), chunks, st.text(NOT_HEX, min_size=1, max_size=8)),
        st.builds(_no_terminator, st.just(path), chunks, st.text(TOKEN, min_size=2, max_size=2)),
        st.builds(_bad_trailer, st.just(path), chunks, st.text(TOKEN, min_size=1, max_size=12)),
        st.builds(_bad_extension, st.just(path), chunks, st.characters(max_codepoint=31)),
        st.builds(_bare_lf, st.just(path), chunks),
        st.builds(
            _coding,
            st.just(path),
            chunks,
            st.text(TOKEN, min_size=1, max_size=12).filter(lambda t: t != "chunked"),
        ),
        st.builds(_with_length, st.just(path), chunks, st.integers(0, len(body) * 2)),
    )


def _not_hex(path: str, chunks: list[bytes], size: str) -> Framing:
    encoded = _encode(chunks, [], [])
    first = encoded.index(b"\r\n")
    return Framing(
        _head(path, TE) + size.encode() + encoded[first:],
        "size not hexadecimal",
        "InvalidChunkSize",
    )


def _no_terminator(path: str, chunks: list[bytes], instead: str) -> Framing:
    encoded = _encode(chunks, [], [])
    end = encoded.index(b"\r\n") + 2 + len(chunks[0])
    broken = encoded[:end] + instead.encode() + encoded[end + 2 :]
    return Framing(_head(path, TE) + broken, "chunk without CRLF", "ChunkMissingTerminator")


def _bad_trailer(path: str, chunks: list[bytes], line: str) -> Framing:
    return Framing(
        _head(path, TE) + _encode(chunks, [], [line]), "trailer without a colon", "InvalidHeader"
    )


def _bad_extension(path: str, chunks: list[bytes], control: str) -> Framing:
    return Framing(
        _head(path, TE) + _encode(chunks, [f";a{control}"], []),
        "control character in a chunk extension",
        "InvalidChunkExtension",
    )


def _bare_lf(path: str, chunks: list[bytes]) -> Framing:
    encoded = _encode(chunks, [], [])
    first = encoded.index(b"\r\n")
    broken = encoded[:first] + b"\n" + encoded[first + 2 :]
    return Framing(_head(path, TE) + broken, "size line ended by LF alone", "InvalidChunkSize")


def _coding(path: str, chunks: list[bytes], coding: str) -> Framing:
    head = _head(path, [("Transfer-Encoding", coding)])
    return Framing(
        head + _encode(chunks, [], []), "unknown transfer coding", "UnsupportedTransferCoding"
    )


def _with_length(path: str, chunks: list[bytes], length: int) -> Framing:
    head = _head(path, [("Content-Length", str(length)), *TE])
    return Framing(
        head + _encode(chunks, [], []), "Content-Length and chunked together", "InvalidHeader"
    )
