"""The value checks a CRD schema states besides its structure, as the Kubernetes API server applies
them (k8s.io/kube-openapi validate and strfmt at the KUBERNETES_VERSION pin): string `format`s
(date-time, ipv4, ipv6, ...) and the range of integer formats (int32, int64).

Formats the API server does not know, or does not validate, are ignored as it ignores them.
Only the string formats a schema Runway checks uses are implemented; any other is named in
UNCHECKED_FORMATS, a list the tests hold to the pinned API server's own.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

from core.fields.errors import shown
from core.model.numbers import INT64_MAX, INT64_MIN

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_DATE = re.compile(r"\A([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
# strfmt's DateTimePattern, matched (as Go's regexp does) against the whole lowercased time part.
_TIME = re.compile(r"\A([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DIGITS = re.compile(r"\A[0-9]+\Z")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(text: str) -> bool:
    """Go's time.Parse("2006-01-02", text): four-digit year, real month and day."""
    found = _DATE.match(text)
    if found is None:
        return False
    year, month, day = (int(g) for g in found.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12:
        return False
    return 1 <= day <= (29 if month == 2 and leap else _DAYS[month - 1])


def is_date_time(text: str) -> bool:
    """strfmt.IsDateTime: a date, a "t" and a time of day with a zone (case-insensitive)."""
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    found = _TIME.match(parts[1])
    if found is None:
        return False
    return found.group(1) <= "23" and found.group(2) <= "59" and found.group(3) <= "59"


def _is_sloppy_ipv4(text: str) -> bool:
    """k8s.io/utils ParseIPSloppy on a dotted quad: leading zeros allowed, each part <= 255."""
    parts = text.split(".")
    return len(parts) == 4 and all(_DIGITS.match(p) and int(p) <= 255 for p in parts)


def _is_ipv6(text: str) -> bool:
    """Go's net.ParseIP on text with a colon: no zone; an embedded IPv4 may have leading zeros."""
    if "%" in text or not text.isascii():
        return False
    head, _, last = text.rpartition(":")
    if "." in last:
        if not _is_sloppy_ipv4(last):
            return False
        quad = [int(p) for p in last.split(".")]
        text = f"{head}:{quad[0] * 256 + quad[1]:x}:{quad[2] * 256 + quad[3]:x}"
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def is_ipv4(text: str) -> bool:
    """strfmt ipv4: parses as an IP (sloppily) and contains a dot (so ::ffff:1.2.3.4 passes)."""
    if ":" in text:
        return _is_ipv6(text) and "." in text
    return _is_sloppy_ipv4(text)


def is_ipv6(text: str) -> bool:
    """govalidator.IsIPv6: parses as an IP and contains a colon."""
    return ":" in text and _is_ipv6(text)


STRING_FORMATS: Mapping[str, Callable[[str], bool]] = {
    "datetime": is_date_time,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "password": lambda _: True,
}
# Formats the pinned API server validates that no schema Runway ships uses: a CRD given with
# --crds that uses one is checked for everything else; docs/checks.md names the gap.
UNCHECKED_FORMATS = frozenset(
    {"bsonobjectid", "uri", "email", "hostname", "cidr", "mac", "uuid", "uuid3", "uuid4"}
    | {"uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte"}
    | {"date", "duration", "k8s-short-name", "k8s-long-name"}
)
_INT_RANGES = {"int32": (INT32_MIN, INT32_MAX), "int64": (INT64_MIN, INT64_MAX)}


def format_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why `value` breaks the `format` of `schema`, in the API server's words, or None."""
    fmt = schema.get("format")
    kind = schema.get("type")
    if not isinstance(fmt, str):
        fmt = "int64" if kind == "integer" else None  # every integer is an int64 at least
    if fmt is None:
        return None
    if isinstance(value, str) and kind in (None, "string"):
        check = STRING_FORMATS.get(fmt.replace("-", ""))
        if check is not None and not check(value):
            return f"in body must be of type {fmt}: {_quote(value)}"
    elif isinstance(value, int) and not isinstance(value, bool) and kind == "integer":
        low, high = _INT_RANGES.get(fmt, (INT64_MIN, INT64_MAX))
        if not low <= value <= high:
            shown = value if value.bit_length() <= 256 else "an integer of over 77 digits"
            return f"in body must be of type {fmt if fmt in _INT_RANGES else 'int64'}: {shown}"
    return None


def _quote(text: str) -> str:
    return '"' + shown(text).replace("\\", "\\\\").replace('"', '\\"') + '"'
