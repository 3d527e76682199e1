"""Values from requests as they enter a log line: one line, bounded, unambiguous.

A uid or a name is chosen by whoever sends the request. Written as it came, a CRLF in it forged
log lines, a space forged `key=value` pairs, and a 2 MiB uid made a 2 MiB line. `field` escapes
every character that is not printable, the space and the backslash (`\\n`, `\\x20`, `\\u2028`),
and cuts the result at FIELD_CHARS characters with a marker giving the original length
(`...[2097152chars]`).
"""

from __future__ import annotations

FIELD_CHARS = 256
NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", " ": "\\x20"}


def _escaped(char: str) -> str:
    if char in NAMED:
        return NAMED[char]
    if char.isprintable():
        return char
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def field(value: object) -> str:
    """`value` as one log field: escaped, at most FIELD_CHARS characters plus a length marker."""
    text = value if isinstance(value, str) else str(value)
    pieces: list[str] = []
    size = 0
    for char in text[: FIELD_CHARS + 1]:  # every character escapes to one or more
        piece = _escaped(char)
        if size + len(piece) > FIELD_CHARS:
            return "".join(pieces) + f"...[{len(text)}chars]"
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)
