"""Webhook certificates: issue, the atomic on-disk bundle, and two-phase rotation."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

from cryptography import x509

from certs.bundle import Identity, issue_bundle, load_certificates, rotate_bundle

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


def issued(tmp_path: Path) -> Path:
    issue_bundle(
        tmp_path,
        Identity.for_service("runway-webhook", "runway-system"),
        days=90,
        ca_days=365,
        now=T0,
    )
    return tmp_path


def serial(path: Path) -> int:
    return load_certificates(path)[0].serial_number


def test_issue_writes_ca_and_serving_pair_behind_one_switch(tmp_path: Path) -> None:
    directory = issued(tmp_path)

    leaf = load_certificates(directory / "tls.crt")[0]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sorted(p.name for p in directory.iterdir() if not p.name.startswith("..")) == [
        "ca.crt",
        "ca.key",
        "tls.crt",
        "tls.key",
    ]
    assert all(
        os.readlink(directory / n) == f"..data/{n}" for n in ("ca.crt", "tls.crt", "tls.key")
    )
    assert stat.S_IMODE((directory / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "ca.key").stat().st_mode) == 0o600
    assert names.get_values_for_type(x509.DNSName) == [
        "runway-webhook.runway-system.svc",
        "runway-webhook.runway-system.svc.cluster.local",
        "runway-webhook.runway-system",
        "runway-webhook",
        "localhost",
    ]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert leaf.issuer == load_certificates(directory / "ca.crt")[0].subject


def test_rotation_does_nothing_when_nothing_is_due(tmp_path: Path) -> None:
    directory = issued(tmp_path)
    before = serial(directory / "tls.crt")

    assert (
        rotate_bundle(directory, renew_within=30 * DAY, days=90, ca_days=365, now=T0 + 10 * DAY)
        == []
    )
    assert serial(directory / "tls.crt") == before


def test_serving_certificate_is_renewed_before_expiry_by_the_same_ca(tmp_path: Path) -> None:
    directory = issued(tmp_path)
    before = serial(directory / "tls.crt")

    changed = rotate_bundle(
        directory, renew_within=30 * DAY, days=90, ca_days=365, now=T0 + 70 * DAY
    )

    assert changed == ["tls"]
    assert serial(directory / "tls.crt") != before
    assert len(load_certificates(directory / "ca.crt")) == 1
    assert len(list(directory.glob("..2*"))) == 2  # the new version and the one before


def test_ca_rotation_first_adds_the_new_ca_then_moves_the_serving_certificate(
    tmp_path: Path,
) -> None:
    directory = issued(tmp_path)  # CA valid 365 days, serving certificate 90
    old_ca = load_certificates(directory / "ca.crt")[0]

    def rotate(day: int) -> list[str]:
        return rotate_bundle(
            directory, renew_within=30 * DAY, days=90, ca_days=365, now=T0 + day * DAY
        )

    assert rotate(300) == ["tls"]  # routine renewal
    leaf_before = serial(directory / "tls.crt")

    phase1 = rotate(340)  # CA has 25 days left
    bundle = load_certificates(directory / "ca.crt")
    leaf_in_overlap = serial(directory / "tls.crt")
    phase2 = rotate(352)  # old CA has 13 days left
    leaf_after = load_certificates(directory / "tls.crt")[0]
    phase3 = rotate(370)  # old CA expired

    assert phase1 == ["ca"]
    assert [c == old_ca for c in bundle] == [False, True]
    assert leaf_in_overlap == leaf_before
    assert phase2 == ["tls"]
    leaf_after.verify_directly_issued_by(bundle[0])  # raises unless the new CA signed it
    assert phase3 == ["ca-bundle"]
    assert load_certificates(directory / "ca.crt") == [bundle[0]]
