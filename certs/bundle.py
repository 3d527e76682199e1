"""The webhook's certificate directory: issue, rotate, and switch every file at once.

Layout (the one kubelet uses for Secret volumes, so a mounted Secret behaves the same):
  DIR/..2026_11_30_09_00_00.123456/{ca.crt,ca.key,tls.crt,tls.key}   one folder per version
  DIR/..data -> ..2026_11_30_09_00_00.123456                         switched by one rename
  DIR/ca.crt -> ..data/ca.crt   (and ca.key, tls.crt, tls.key)
A reader opening DIR/tls.crt and DIR/tls.key therefore never sees a new certificate with an old
key. ca.crt is a bundle: during a CA rotation it holds the new CA and the old one, so clients
that trust the bundle accept certificates from either while they change over.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.authority import KeyPair, issue, new_authority
from certs.contents import DATA, check_target, load_bundle
from certs.errors import BundleError
from certs.lifetimes import check_lifetimes, renew_window

SECRET_MODE = 0o600
PUBLIC_MODE = 0o644
# Inside each version folder write_bundle makes: the mark that it made the folder, the one
# sign that lets it remove the folder later (a folder of another name or without it stays).
VERSION_MARK = ".runway-version"
MARK = b"a certificate bundle version written by runway certs\n"
# A version folder's name, as tempfile.mkdtemp makes it from write_bundle's prefix.
VERSION_NAME = re.compile(r"\.\.\d{4}(?:_\d{2}){5}\.\d{6}\.[a-z0-9_]{8}")
LINK_ATTEMPTS = 16  # random 64-bit names: a second attempt is already next to impossible


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the serving certificate is for."""

    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]

    @classmethod
    def for_service(cls, service: str, namespace: str) -> Identity:
        svc = f"{service}.{namespace}.svc"
        return cls(
            (svc, f"{svc}.cluster.local", f"{service}.{namespace}", service, "localhost"),
            ("127.0.0.1",),
        )


def write_bundle(
    directory: Path, files: Mapping[str, tuple[bytes, int]], *, now: dt.datetime
) -> None:
    """Write a new version folder, then switch ..data to it with one atomic rename. Only what
    this function created is ever removed: version folders carrying VERSION_MARK (see
    _retire), and nothing else in `directory`, whatever its name."""
    directory.mkdir(parents=True, exist_ok=True)
    # Unique even for two writes in the same microsecond; readable like a Secret volume.
    version = Path(tempfile.mkdtemp(prefix=f"..{now:%Y_%m_%d_%H_%M_%S.%f}.", dir=directory))
    version.chmod(0o755)
    for name, (data, mode) in {**files, VERSION_MARK: (MARK, PUBLIC_MODE)}.items():
        fd = os.open(version / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    previous = os.readlink(directory / DATA) if (directory / DATA).is_symlink() else None
    _replace_with_link(directory / DATA, version.name)
    for name in files:
        link = directory / name
        if not (link.is_symlink() and os.readlink(link) == f"{DATA}/{name}"):
            _replace_with_link(link, f"{DATA}/{name}")
    # Keep the version just replaced (a reader may have resolved the old link a moment ago);
    # any older version this code wrote goes.
    for old in directory.iterdir():
        if old.name not in (version.name, previous):
            _retire(old, files)


def _retire(folder: Path, files: Mapping[str, tuple[bytes, int]]) -> None:
    """Remove `folder` when it is a version folder write_bundle made: named as mkdtemp named it
    (VERSION_NAME), a real folder (not a link), holding VERSION_MARK. Only the files a version
    holds are removed, then the folder if that left it empty: anything else put inside stays,
    and so does the folder. Any other entry of the directory (`..x`, `..2026`, a user's
    `..data.tmp`) is never touched."""
    if not VERSION_NAME.fullmatch(folder.name) or folder.is_symlink() or not folder.is_dir():
        return
    mark = folder / VERSION_MARK
    if mark.is_symlink() or not mark.is_file() or mark.read_bytes() != MARK:
        return
    for name in (*files, VERSION_MARK):
        entry = folder / name
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
    with contextlib.suppress(OSError):  # not empty: something not ours is inside; it stays
        folder.rmdir()


def _replace_with_link(path: Path, target: str) -> None:
    """Point `path` at `target` with one rename, through a link of a name no one else holds."""
    for _ in range(LINK_ATTEMPTS):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            tmp.symlink_to(target)
            break
        except FileExistsError:
            continue
    else:
        raise BundleError(str(path.parent), "cannot create a temporary link beside it")
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def issue_bundle(
    directory: Path,
    identity: Identity,
    *,
    days: int,
    ca_days: int,
    now: dt.datetime,
    replace_ca: bool = False,
) -> None:
    """A new CA and a serving certificate signed by it. A directory that already holds any
    part of a bundle is refused unless `replace_ca`: its CA is in the caBundle the API server
    trusts, and a new one breaks that trust until it is injected."""
    check_lifetimes(days=days, ca_days=ca_days)
    check_target(directory, replace_ca=replace_ca)
    ca = new_authority("runway-webhook-ca", days=ca_days, now=now)
    _write(directory, [ca.cert], ca, _leaf(ca, identity, days, now), now)


def rotate_bundle(
    directory: Path, *, renew_within: dt.timedelta, days: int, ca_days: int, now: dt.datetime
) -> list[str]:
    """Renew what expires within `renew_within`; returns what changed (empty: nothing).

    A CA rotation has two phases so clients never see a certificate they do not trust yet:
    first a new CA joins ca.crt (push it with `runway certs inject`) while the old serving
    certificate stays; once the old CA is within half the window of expiry, the serving
    certificate moves to the new CA. Expired CAs leave the bundle.
    """
    check_lifetimes(days=days, ca_days=ca_days)
    renew_window(renew_within / dt.timedelta(days=1), ca_days=ca_days)
    cas, ca_key, leaf, leaf_matches_key = load_bundle(directory)
    current = KeyPair(cas[0], ca_key)
    alive = [c for c in cas if c.not_valid_after_utc > now]
    changed: list[str] = []
    if current.cert.not_valid_after_utc - now <= renew_within:
        current = new_authority("runway-webhook-ca", days=ca_days, now=now)
        alive = [current.cert, *alive]
        changed.append("ca")
    leaf_due = not leaf_matches_key or _is_leaf_due(leaf, alive, current.cert, renew_within, now)
    new_leaf = _leaf(current, _identity_of(directory, leaf), days, now) if leaf_due else None
    if new_leaf is not None:
        changed.append("tls")
    if len(alive) != len(cas) and not changed:
        changed.append("ca-bundle")
    if changed:
        _write(directory, alive, current, new_leaf, now)
    return changed


def _is_leaf_due(
    leaf: x509.Certificate,
    alive: Sequence[x509.Certificate],
    current: x509.Certificate,
    renew_within: dt.timedelta,
    now: dt.datetime,
) -> bool:
    """Renew a leaf of the current CA when it is within the window. A leaf of an older CA
    (the overlap after a CA rotation, while the new CA reaches the caBundle) moves only once
    it or its CA is within half the window; a leaf of no living CA in the bundle moves now."""
    issuer = _issuer_of(leaf, alive)
    if issuer is None:
        return True
    if issuer == current:
        return leaf.not_valid_after_utc - now <= renew_within
    ends = min(leaf.not_valid_after_utc, issuer.not_valid_after_utc)
    return ends - now <= renew_within / 2


def _issuer_of(leaf: x509.Certificate, cas: Sequence[x509.Certificate]) -> x509.Certificate | None:
    """The CA in `cas` whose key signed `leaf` (matched by key identifier), if any."""
    try:
        wanted = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    except x509.ExtensionNotFound:
        return None
    for ca in cas:
        try:
            digest = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
        except x509.ExtensionNotFound:
            continue
        if digest == wanted.key_identifier:
            return ca
    return None


def load_certificates(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def _leaf(ca: KeyPair, identity: Identity, days: int, now: dt.datetime) -> KeyPair:
    return issue(
        ca,
        identity.dns_names[0],
        days=days,
        now=now,
        dns_names=identity.dns_names,
        ip_addresses=identity.ip_addresses,
    )


def _identity_of(directory: Path, cert: x509.Certificate) -> Identity:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        raise BundleError(
            str(directory / "tls.crt"),
            "names no DNS names or addresses (no subjectAltName); issue a new bundle with --replace-ca",
        ) from None
    dns = tuple(names.get_values_for_type(x509.DNSName))
    ips = tuple(str(ip) for ip in names.get_values_for_type(x509.IPAddress))
    if not dns:
        raise BundleError(
            str(directory / "tls.crt"), "names no DNS name; issue a new bundle with --replace-ca"
        )
    return Identity(dns, ips)


def _write(
    directory: Path,
    cas: Sequence[x509.Certificate],
    ca: KeyPair,
    leaf: KeyPair | None,
    now: dt.datetime,
) -> None:
    if leaf is None:  # keep the serving pair as it is
        leaf_cert, leaf_key = (
            (directory / "tls.crt").read_bytes(),
            (directory / "tls.key").read_bytes(),
        )
    else:
        leaf_cert, leaf_key = leaf.cert_pem, leaf.key_pem
    bundle = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in cas)
    files = {
        "ca.crt": (bundle, PUBLIC_MODE),
        "ca.key": (ca.key_pem, SECRET_MODE),
        "tls.crt": (leaf_cert, PUBLIC_MODE),
        "tls.key": (leaf_key, SECRET_MODE),
    }
    write_bundle(directory, files, now=now)
