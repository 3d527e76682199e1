"""The server's TLS context, built for every new connection from a consistent cert/key pair.

gunicorn's default opens the certificate and the key as two separate paths. Behind a `..data`
symlink (a Kubernetes Secret volume, or `runway certs`), a switch between those two opens pairs a
new certificate with an old key and that handshake fails. So the certificate path is resolved
once, and the key is taken from the same version folder.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from typing import Any


def consistent_pair(certfile: str, keyfile: str) -> tuple[str, str]:
    """(certificate, key) paths from one version folder when both sit behind the same links."""
    resolved_cert = os.path.realpath(certfile)
    if os.path.dirname(os.path.abspath(certfile)) != os.path.dirname(os.path.abspath(keyfile)):
        return resolved_cert, keyfile
    sibling = os.path.join(os.path.dirname(resolved_cert), os.path.basename(keyfile))
    return resolved_cert, sibling if os.path.exists(sibling) else keyfile


LOAD_ATTEMPTS = 3


def load_pair(context: ssl.SSLContext, certfile: str, keyfile: str) -> None:
    """Load a consistent pair; if its version folder vanished between resolving and reading (a
    rotation completed twice meanwhile), resolve again."""
    for attempt in range(1, LOAD_ATTEMPTS + 1):
        cert, key = consistent_pair(certfile, keyfile)
        try:
            context.load_cert_chain(certfile=cert, keyfile=key)
            return
        except FileNotFoundError:
            if attempt == LOAD_ATTEMPTS:
                raise


def server_context(conf: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn's `ssl_context` hook: a server context from a consistent pair, TLS 1.2 or newer."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_pair(context, conf.certfile, conf.keyfile)
    if conf.ciphers:
        context.set_ciphers(conf.ciphers)
    return context
