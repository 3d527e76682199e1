"""Kubernetes resource quantities ("500m", "4Ti", "1.5Gi", "2e3") as exact Decimals."""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation, localcontext

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[eE][+-]?[0-9]+)|[a-zA-Z]*)$")
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+$")
MAX_QUANTITY = Decimal(2**63 - 1)  # Kubernetes' int64 limit on a quantity's value
MAX_LENGTH = 128  # characters; longer strings are not quantities anyone writes
_HUGE = MAX_QUANTITY * 10  # stands for "beyond the limit" without computing 10**huge
_WIDE = Context(prec=200, Emax=MAX_EMAX, Emin=MIN_EMIN)
# The decimal SI suffixes (k = 10^3 ... E = 10^18) and the binary ones (Ki = 2^10 ... Ei = 2^60).
_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    **{s: Decimal(10) ** (3 * n) for n, s in enumerate("kMGTPE", start=1)},
    **{f"{s}i": Decimal(2) ** (10 * n) for n, s in enumerate("KMGTPE", start=1)},
}


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value, or None when it is not a valid Kubernetes quantity or its
    magnitude is beyond what Kubernetes can hold (MAX_QUANTITY)."""
    amount = _parse(value)
    if amount is None or abs(amount) > MAX_QUANTITY:
        return None
    return amount


def quantity_problem(value: object) -> str | None:
    """Why `value` is not a usable quantity (for messages), or None when it is one."""
    if isinstance(value, str) and len(value) > MAX_LENGTH:
        return f"not a valid resource quantity: longer than {MAX_LENGTH} characters"
    amount = _parse(value)
    if amount is None:
        return "not a valid resource quantity (such as 4, 500m, 32Gi)"
    if abs(amount) > MAX_QUANTITY:
        return f"out of range: a quantity must be at most 2^63-1 ({MAX_QUANTITY}) in magnitude"
    return None


def _parse(value: object) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value)) if math.isfinite(value) else None
    if not isinstance(value, str) or len(value) > MAX_LENGTH:
        return None
    match = _QUANTITY.match(value)
    if match is None or value != value.strip():
        return None
    number, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation:
        return None
    if _EXPONENT.match(suffix):
        # Exact for any exponent: scaleb only moves the decimal point, and an exponent beyond
        # MAX_EXPONENT cannot give a value inside MAX_QUANTITY (the mantissa is <= MAX_LENGTH digits).
        exponent = suffix[1:].lstrip("+")
        digits = exponent.lstrip("-").lstrip("0")
        if len(digits) > 6:
            return _HUGE if not exponent.startswith("-") and base else Decimal(0)
        with localcontext(_WIDE):
            value = base.scaleb(int(exponent))
        # Outside the wide context, even abs() of a value beyond Emax raises Overflow.
        if value.adjusted() > 40:
            return _HUGE
        return value if value.adjusted() > -40 else Decimal(0)
    scale = _SUFFIXES.get(suffix)
    return None if scale is None else base * scale


def format_limit(value: Decimal) -> str:
    """A compact human form of a ceiling for messages (4Ti stays 4Ti, 512 stays 512)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        scale = _SUFFIXES[suffix]
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value.normalize()) if value != value.to_integral() else str(int(value))
