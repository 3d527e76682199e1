"""Values from requests as they enter a log line: one line, bounded, unambiguous.

A uid or a name is chosen by whoever sends the request. Written as it came, a CRLF in it forged
log lines, a space forged `key=value` pairs, and a 2 MiB uid made a 2 MiB line. `field` escapes
every character that is not printable and the backslash (`\\n`, `\\x1b`, `\\u2028`, `\\\\`),
cuts the result at FIELD_CHARS characters with a marker giving the original length
(`...[2097152chars]`), and quotes it, logfmt-style, when it holds a space, `"` or `=`
(`uid="a b"`, the quote inside escaped as `\\"`).
"""

from __future__ import annotations

FIELD_CHARS = 256
NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
QUOTED = frozenset(' "=')


def _escaped(char: str) -> str:
    if char in NAMED:
        return NAMED[char]
    if char.isprintable():
        return char
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _cut(text: str) -> str:
    pieces: list[str] = []
    size = 0
    for char in text[: FIELD_CHARS + 1]:  # every character escapes to one or more
        piece = _escaped(char)
        if size + len(piece) > FIELD_CHARS:
            return "".join(pieces) + f"...[{len(text)}chars]"
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def field(value: object) -> str:
    """`value` as one log field: escaped, at most FIELD_CHARS characters plus a length marker,
    quoted when it holds a space, a quote or `=`."""
    text = _cut(value if isinstance(value, str) else str(value))
    if QUOTED.isdisjoint(text):
        return text
    return '"' + text.replace('"', '\\"') + '"'
