"""What a certificate directory holds, read and checked: every problem is a BundleError naming
the directory or the file (the layout: certs/bundle.py)."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from certs.errors import BundleError

DATA = "..data"
FILES = ("ca.crt", "ca.key", "tls.crt", "tls.key")


def check_target(directory: Path, *, replace_ca: bool) -> None:
    """Refuse to issue into a directory that holds any part of a bundle, unless `replace_ca`."""
    existing = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise BundleError(str(existing), "is not a directory")
    for name in FILES:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            raise BundleError(str(path), "is a directory, not a certificate file")
    present = [
        n for n in (*FILES, DATA) if (directory / n).is_symlink() or (directory / n).exists()
    ]
    if present and not replace_ca:
        raise BundleError(
            str(directory),
            f"already holds a certificate bundle ({', '.join(present)}); a new CA would break "
            f"the caBundle the API server trusts. Renew with `runway certs rotate --out "
            f"{directory}`, or pass --replace-ca and then inject the new ca.crt",
        )


def load_bundle(
    directory: Path,
) -> tuple[list[x509.Certificate], ec.EllipticCurvePrivateKey, x509.Certificate, bool]:
    """ca.crt, ca.key, tls.crt and whether tls.key is tls.crt's key; a BundleError naming the
    directory or the file that cannot be used."""
    if not directory.is_dir():
        raise BundleError(
            str(directory),
            "holds no certificate bundle (no such directory); "
            f"create one with `runway certs issue --out {directory}`",
        )
    cas = _certificates(directory / "ca.crt")
    ca_key = _private_key(directory / "ca.key")
    leaf = _certificates(directory / "tls.crt")[0]
    leaf_key = _private_key(directory / "tls.key")
    if (
        not isinstance(ca_key, ec.EllipticCurvePrivateKey)
        or ca_key.public_key() != cas[0].public_key()
    ):
        raise BundleError(
            str(directory / "ca.key"),
            "is not the EC key of the first CA in ca.crt; issue a new bundle with --replace-ca",
        )
    return cas, ca_key, leaf, leaf_key.public_key() == leaf.public_key()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BundleError(
            str(path), "missing from the bundle; issue a new one with --replace-ca"
        ) from None
    except IsADirectoryError:
        raise BundleError(str(path), "is a directory, not a certificate file") from None


def _certificates(path: Path) -> list[x509.Certificate]:
    data = _read(path)
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        found = []
    if not found:
        raise BundleError(str(path), "holds no PEM certificate")
    return found


def _private_key(path: Path) -> PrivateKeyTypes:
    data = _read(path)
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise BundleError(str(path), "holds no unencrypted PEM private key") from None
