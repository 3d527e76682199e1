"""`runway certs` lifetimes: --days and --ca-days over their whole range, the renewal window, and
a serving certificate that never outlives the CA signing it (property tests, certs/lifetimes.py)."""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from hypothesis import given
from hypothesis import strategies as st

from certs.bundle import Identity, issue_bundle, load_certificates, rotate_bundle
from certs.lifetimes import MAX_DAYS
from tests.support.certcli import BOUNDED, ISSUED, run

BACKDATE = dt.timedelta(minutes=5)


def lifetime_error(days: int, ca_days: int) -> str | None:
    """The documented rule for --days and --ca-days: the message, or None when accepted."""
    for flag, value in (("--days", days), ("--ca-days", ca_days)):
        if not 1 <= value <= MAX_DAYS:
            return f"runway: {flag}: must be a whole number of days from 1 to {MAX_DAYS}, not {value}\n"
    if days > ca_days:
        return (
            f"runway: --days: {days} days would outlive the CA ({ca_days} days, --ca-days); "
            f"choose at most {ca_days} or raise --ca-days\n"
        )
    return None


DAYS = st.one_of(
    st.integers(-3, 3), st.integers(MAX_DAYS - 2, MAX_DAYS + 2), st.integers(-(10**12), 10**12)
)


@BOUNDED
@given(days=DAYS, ca_days=DAYS)
def test_issue_accepts_exactly_the_documented_lifetimes(
    days: int, ca_days: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as name:
        out = Path(name) / "certs"
        code, stdout, stderr = run(
            capsys,
            "certs",
            "issue",
            "--out",
            str(out),
            f"--days={days}",
            f"--ca-days={ca_days}",
        )
        error = lifetime_error(days, ca_days)
        if error is not None:
            assert (code, stdout, stderr, out.exists()) == (2, "", error, False)
            return
        leaf = load_certificates(out / "tls.crt")[0]
        ca = load_certificates(out / "ca.crt")[0]

    assert (code, stdout, stderr) == (0, ISSUED.format(out=out), "")
    assert (
        leaf.not_valid_after_utc - leaf.not_valid_before_utc == dt.timedelta(days=days) + BACKDATE
    )
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == dt.timedelta(days=ca_days) + BACKDATE
    assert leaf.not_valid_after_utc <= ca.not_valid_after_utc


WINDOWS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 29.5, 3649.0, 3650.0, 3651.0, -0.5]),
)


@BOUNDED
@given(window=WINDOWS)
def test_rotate_accepts_a_renewal_window_from_zero_to_below_the_ca_lifetime(
    window: float, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as name:
        out = Path(name)
        issue_bundle(
            out,
            Identity.for_service("runway-webhook", "runway-system"),
            days=365,
            ca_days=3650,
            now=dt.datetime.now(dt.UTC),
        )
        code, stdout, stderr = run(
            capsys, "certs", "rotate", "--out", str(out), f"--renew-within-days={window!r}"
        )

    if not math.isfinite(window) or window < 0:
        expected = (2, "", f"runway: --renew-within-days: must be 0 or more days, not {window}\n")
    elif window >= 3650:
        expected = (
            2,
            "",
            f"runway: --renew-within-days: {window:g} is not shorter than the CA's lifetime "
            "(3650 days, --ca-days): every rotate would add another CA\n",
        )
    elif window >= 365:
        expected = (0, "renewed: tls\n", "")  # a window as long as the leaf: renew now
    else:
        expected = (0, "nothing to renew\n", "")
    assert (code, stdout, stderr) == expected


# Each slot of the directory: absent, a regular file of junk, a link to nothing, or a real one.
def test_a_leaf_never_outlives_the_ca_that_signs_it_and_still_moves_in_two_phases(
    tmp_path: Path,
) -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    day = dt.timedelta(days=1)
    issue_bundle(
        tmp_path,
        Identity.for_service("runway-webhook", "runway-system"),
        days=365,
        ca_days=400,
        now=t0,
    )

    def rotate(at: int) -> list[str]:
        return rotate_bundle(
            tmp_path, renew_within=30 * day, days=365, ca_days=400, now=t0 + at * day
        )

    def leaf() -> x509.Certificate:
        return load_certificates(tmp_path / "tls.crt")[0]

    renewed = rotate(340)  # leaf within 30 days; the CA (60 days left) signs one to its own end
    clamped = leaf()
    first_ca = load_certificates(tmp_path / "ca.crt")[0]
    phase1 = rotate(375)  # the CA has 25 days left: a new CA joins, the leaf stays
    kept = leaf()
    phase2 = rotate(386)  # the old CA has 14 days left (under half the window): the leaf moves
    bundle = load_certificates(tmp_path / "ca.crt")

    assert renewed == ["tls"]
    assert clamped.not_valid_after_utc == first_ca.not_valid_after_utc == t0 + 400 * day
    assert (phase1, kept.serial_number) == (["ca"], clamped.serial_number)
    assert phase2 == ["tls"]
    leaf().verify_directly_issued_by(bundle[0])
    assert bundle[1] == first_ca
