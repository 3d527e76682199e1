"""The server's cert/key pair stays consistent while the files are rotated underneath it."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from pathlib import Path

from certs.bundle import Identity, issue_bundle, rotate_bundle
from webhook.tls import consistent_pair, load_pair

ROTATIONS = 150
LOADS = 600


def test_pair_comes_from_one_version_folder(tmp_path: Path) -> None:
    issue_bundle(
        tmp_path, Identity.for_service("w", "ns"), days=2, ca_days=3, now=dt.datetime.now(dt.UTC)
    )

    cert, key = consistent_pair(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))

    assert Path(cert).parent == Path(key).parent == (tmp_path / "..data").resolve()
    assert (Path(cert).name, Path(key).name) == ("tls.crt", "tls.key")


def test_plain_files_in_different_folders_are_used_as_given(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    assert consistent_pair(str(tmp_path / "a" / "c.pem"), str(tmp_path / "b" / "k.pem")) == (
        str(tmp_path / "a" / "c.pem"),
        str(tmp_path / "b" / "k.pem"),
    )


def test_loading_while_rotating_never_pairs_a_certificate_with_another_key(tmp_path: Path) -> None:
    issue_bundle(
        tmp_path, Identity.for_service("w", "ns"), days=2, ca_days=3, now=dt.datetime.now(dt.UTC)
    )
    failures: list[str] = []
    stop = threading.Event()

    def rotate() -> None:
        for _ in range(ROTATIONS):
            if stop.is_set():
                return
            rotate_bundle(
                tmp_path,
                renew_within=dt.timedelta(days=2.5),
                days=2,
                ca_days=3,
                now=dt.datetime.now(dt.UTC),
            )

    rotator = threading.Thread(target=rotate)
    rotator.start()
    try:
        for _ in range(LOADS):
            try:
                load_pair(
                    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH),
                    str(tmp_path / "tls.crt"),
                    str(tmp_path / "tls.key"),
                )
            except (ssl.SSLError, OSError) as err:
                failures.append(f"{type(err).__name__}: {err}")
    finally:
        stop.set()
        rotator.join(timeout=120)

    assert failures == []
