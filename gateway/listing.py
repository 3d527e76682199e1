"""Reading a /model/info listing one entry at a time (issue #46).

LiteLLM 1.108.7 answers about 8 KiB per deployment in /model/info (model_info carries every
field of its cost map, most of them null), so 1,000 models are an 8 MB answer, and parsed whole
such an answer takes about 20 times its size. Here the answer's text is walked with the standard
decoder's raw_decode: the top-level object key by key, and the elements of its "data" list one
at a time, each reduced at once to the fields the sync reads (`reduce`) and dropped, so the
memory is the text, one element, and the reduced entries (at most MAX_ENTRIES).

Pure: text in, reduced entries out, or ValueError (not JSON, or not the shape) / TooMany.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

MAX_ENTRIES = 20_000  # reduced entries one listing may hold (about 10 MB of them)
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NotAnObject(ValueError):
    """The answer is JSON, but not an object."""


class NoDataList(ValueError):
    """The answer is a JSON object without a "data" list."""


class TooMany(ValueError):
    """The "data" list holds more than MAX_ENTRIES usable entries."""


Reduce = Callable[[Mapping[str, Any]], dict[str, Any] | None]


def entries(text: str, reduce: Reduce, limit: int = MAX_ENTRIES) -> list[dict[str, Any]]:
    """The reduced entries of the answer `text`, `{"data": [...], ...}` (the last "data" key
    wins, as json.loads would have it); ValueError (RecursionError for deep nesting) when
    `text` is not JSON, NotAnObject / NoDataList when it is not that shape."""
    at = _space(text, 0)
    if not text.startswith("{", at):
        _, end = _DECODER.raw_decode(text, at)  # raises when not JSON
        if _space(text, end) != len(text):
            raise ValueError("extra data")
        raise NotAnObject
    found: list[dict[str, Any]] | None = None
    at = _space(text, at + 1)
    if text.startswith("}", at):
        at += 1
    else:
        while True:
            key, at = _DECODER.raw_decode(text, at)
            if not isinstance(key, str):
                raise ValueError("a key that is not a string")
            at = _expect(text, _space(text, at), ":")
            at = _space(text, at)
            if key == "data" and text.startswith("[", at):
                found, at = _elements(text, at, reduce, limit)
            else:
                _, at = _DECODER.raw_decode(text, at)
                if key == "data":
                    found = None
            at = _space(text, at)
            if text.startswith("}", at):
                at += 1
                break
            at = _space(text, _expect(text, at, ","))
    if _space(text, at) != len(text):
        raise ValueError("extra data")
    if found is None:
        raise NoDataList
    return found


def _elements(text: str, at: int, reduce: Reduce, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The reduced elements of the list at `at` (its "["), and where the list ends."""
    found: list[dict[str, Any]] = []
    at = _space(text, at + 1)
    if text.startswith("]", at):
        return found, at + 1
    while True:
        value, at = _DECODER.raw_decode(text, at)
        reduced = reduce(value) if isinstance(value, Mapping) else None
        del value
        if reduced is not None:
            if len(found) >= limit:
                raise TooMany
            found.append(reduced)
        at = _space(text, at)
        if text.startswith("]", at):
            return found, at + 1
        at = _space(text, _expect(text, at, ","))


def _space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _expect(text: str, at: int, char: str) -> int:
    if not text.startswith(char, at):
        raise ValueError(f"expected {char!r}")
    return at + 1
