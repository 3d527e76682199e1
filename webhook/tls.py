"""The server's TLS context, from a consistent cert/key pair, built again when the files change.

gunicorn's default opens the certificate and the key as two separate paths. Behind a `..data`
symlink (a Kubernetes Secret volume, or `runway certs`), a switch between those two opens pairs a
new certificate with an old key and that handshake fails. So the certificate path is resolved
once, and the key is taken from the same version folder.

gunicorn asks for a context on every new connection. Building one (reading and parsing the pair)
cost 0.64 ms of CPU; the API server opens a new connection for most calls in a burst (235-519
per 600 calls in bench/burst.py), so a worker keeps the context it built and builds a new one
only when the pair's resolved paths or the files' identity (inode, size, mtime and ctime in ns)
changed: a rotation through `..data` resolves to new paths, and a file rewritten in place changes
its ctime.
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
    """A server context from a consistent pair, TLS 1.2 or newer, built now."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_pair(context, conf.certfile, conf.keyfile)
    if conf.ciphers:
        context.set_ciphers(conf.ciphers)
    return context


def _identity(path: str) -> tuple[str, int, int, int, int]:
    st = os.stat(path)
    return (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ServerContexts:
    """gunicorn's `ssl_context` hook (one per server; each worker keeps its own copy after the
    fork): the context last built, while the pair it was built from is unchanged (see the
    module's text). A pair that cannot be read now is built as before, and fails as before."""

    def __init__(self) -> None:
        self._built: tuple[object, ssl.SSLContext] | None = None

    def __call__(self, conf: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        try:
            cert, key = consistent_pair(conf.certfile, conf.keyfile)
            seen: object = (_identity(cert), _identity(key), conf.ciphers)
        except OSError:
            seen = None
        built = self._built
        if seen is not None and built is not None and built[0] == seen:
            return built[1]
        # Identity taken before the build: a rotation in between is seen at the next connection.
        context = server_context(conf, default_factory)
        self._built = (seen, context) if seen is not None else None
        return context
