"""Kubernetes resource quantities ("500m", "4Ti", "1.5Gi", "2e3") as exact Decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[eE][+-]?[0-9]+)|[a-zA-Z]*)$")
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+$")
_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value, or None when it is not a valid Kubernetes quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None or value != value.strip():
        return None
    number, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation:
        return None
    if _EXPONENT.match(suffix):
        return base * Decimal(10) ** int(suffix[1:])
    scale = _SUFFIXES.get(suffix)
    return None if scale is None else base * scale


def format_limit(value: Decimal) -> str:
    """A compact human form of a ceiling for messages (4Ti stays 4Ti, 512 stays 512)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        scale = _SUFFIXES[suffix]
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value.normalize()) if value != value.to_integral() else str(int(value))
