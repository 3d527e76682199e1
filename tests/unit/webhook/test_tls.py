"""The server's cert/key pair stays consistent while the files are rotated underneath it."""

from __future__ import annotations

import contextlib
import datetime as dt
import ssl
import threading
from pathlib import Path

from cryptography import x509

from certs.bundle import Identity, issue_bundle, rotate_bundle
from webhook.tls import ServerContexts, consistent_pair, load_pair

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


class Conf:
    """What the hook reads of gunicorn's config."""

    def __init__(self, folder: Path) -> None:
        self.certfile = str(folder / "tls.crt")
        self.keyfile = str(folder / "tls.key")
        self.ciphers = None


def _no_factory() -> ssl.SSLContext:
    raise AssertionError("the hook builds its own context")


def _served_serial(context: ssl.SSLContext, folder: Path) -> int:
    """The serial of the certificate a handshake with `context` presents."""
    client = ssl.create_default_context(cafile=str(folder / "ca.crt"))
    server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
    server = context.wrap_bio(server_in, server_out, server_side=True)
    peer = client.wrap_bio(client_in, client_out, server_hostname="w.ns.svc")
    for _ in range(10):
        for side in (peer, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        server_in.write(client_out.read())
        client_in.write(server_out.read())
    der = peer.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_the_context_is_kept_while_the_pair_is_unchanged_and_built_again_after_a_rotation(
    tmp_path: Path,
) -> None:
    now = dt.datetime.now(dt.UTC)
    issue_bundle(tmp_path, Identity.for_service("w", "ns"), days=2, ca_days=3, now=now)
    contexts = ServerContexts()
    conf = Conf(tmp_path)

    first = contexts(conf, _no_factory)
    again = contexts(conf, _no_factory)
    rotate_bundle(tmp_path, renew_within=dt.timedelta(days=2.5), days=2, ca_days=3, now=now)
    rotated = contexts(conf, _no_factory)

    assert again is first
    assert rotated is not first
    assert _served_serial(rotated, tmp_path) != _served_serial(first, tmp_path)
    assert contexts(conf, _no_factory) is rotated


def test_a_pair_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    issue_bundle(tmp_path / "a", Identity.for_service("w", "ns"), days=2, ca_days=3, now=now)
    issue_bundle(tmp_path / "b", Identity.for_service("w", "ns"), days=2, ca_days=3, now=now)
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (plain / name).write_bytes((tmp_path / "a" / name).read_bytes())
    contexts = ServerContexts()
    conf = Conf(plain)

    first = contexts(conf, _no_factory)
    for name in ("tls.crt", "tls.key", "ca.crt"):  # the same inodes, new bytes
        (plain / name).write_bytes((tmp_path / "b" / name).read_bytes())
    second = contexts(conf, _no_factory)

    assert second is not first
    assert _served_serial(second, plain) == _served_serial(
        ServerContexts()(conf, _no_factory), plain
    )
    assert _served_serial(second, plain) != _served_serial(first, tmp_path / "a")
