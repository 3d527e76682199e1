"""The lifetimes `runway certs` accepts, checked before anything is written.

A serving certificate lives at least a day and never longer than the CA that signs it:
`--days` above `--ca-days` is refused (a fresh CA could not cover it). A serving certificate
signed later by a CA with less than `--days` left ends with that CA (certs/authority.py) and is
renewed when the CA is rotated. The renewal window must be shorter than the CA's lifetime, or
every `rotate` would add another CA to ca.crt.
"""

from __future__ import annotations

import datetime as dt
import math

from certs.errors import BundleError

MAX_DAYS = 36500  # a hundred years; X.509 dates end in 9999


def check_lifetimes(*, days: int, ca_days: int) -> None:
    """Refuse lifetimes outside 1..MAX_DAYS and a serving certificate outliving its CA."""
    for flag, value in (("--days", days), ("--ca-days", ca_days)):
        if not 1 <= value <= MAX_DAYS:
            raise BundleError(
                flag, f"must be a whole number of days from 1 to {MAX_DAYS}, not {value}"
            )
    if days > ca_days:
        raise BundleError(
            "--days",
            f"{days} days would outlive the CA ({ca_days} days, --ca-days); "
            f"choose at most {ca_days} or raise --ca-days",
        )


def renew_window(days: float, *, ca_days: int) -> dt.timedelta:
    """`--renew-within-days` as a window: finite, 0 or more, shorter than the CA's lifetime."""
    if not math.isfinite(days) or days < 0:
        raise BundleError("--renew-within-days", f"must be 0 or more days, not {days}")
    if days >= ca_days:
        raise BundleError(
            "--renew-within-days",
            f"{days:g} is not shorter than the CA's lifetime ({ca_days} days, --ca-days): "
            "every rotate would add another CA",
        )
    return dt.timedelta(days=days)
