"""Refuse to serve on a port another server holds.

Each gunicorn worker binds its own SO_REUSEPORT socket (webhook/gunicorn_options.py), and the
kernel lets any process of the same user join that group: a second `runway serve` on a busy
port would start, and the kernel would split connections between two servers with different
certificates. So the port is probed first, without SO_REUSEPORT: the probe fails while anything
listens there. SO_REUSEADDR keeps connections in TIME_WAIT from a server that just stopped from
failing it.

What the probe cannot close: two servers started within the same moment (both probe before
either listens) can still share the port.
"""

from __future__ import annotations

import errno
import socket

from webhook.settings import SettingsError


class PortInUse(SettingsError):
    """The port is held by another socket; startup stops."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            "--port",
            f"{host}:{port} is already in use (another runway serve?); "
            "stop that server or choose another port",
        )


def check_port_free(host: str, port: int) -> None:
    """Raise PortInUse if a socket listens on host:port (port 0 is always free)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise PortInUse(host, port) from None
            raise
