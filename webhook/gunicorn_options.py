"""gunicorn settings for the webhook (measured choices: see docs/admission.md, "The webhook (`runway serve`)")."""

from __future__ import annotations

import gc
import logging
from typing import Any

from gunicorn.glogging import Logger

from kubeio.serverlogs import gunicorn_logconfig
from webhook.balance import assign_row, claim_row, release_row, shares_starting
from webhook.multiprocess import server_exiting, server_starting, worker_exited
from webhook.settings import Settings
from webhook.tls import ServerContexts
from webhook.worker import MAX_CONNECTIONS


def gunicorn_options(settings: Settings) -> dict[str, Any]:
    """gthread workers with bounded handshakes and reads (webhook/worker.py) and keep-alive over
    TLS; certificates are read again for every new connection, so replacing the files rotates
    them without a restart."""
    return {
        "bind": [f"{settings.host}:{settings.port}"],
        "worker_class": "webhook.worker.BoundedThreadWorker",
        "workers": settings.workers,
        # Threads serve connections that have sent something (a handshake, a request); idle
        # ones wait in the worker's poller without a thread, up to MAX_CONNECTIONS, and at the
        # limit the oldest idle one makes room (webhook/worker.py).
        "threads": settings.threads,
        "worker_connections": MAX_CONNECTIONS,
        # Each worker listens on its own SO_REUSEPORT socket and the kernel spreads new
        # connections over them. With one shared socket the first worker to wake accepted
        # them all: 8 of 8 keep-alive connections sat on one worker and throughput halved.
        # A port another server holds is refused first (on_starting, webhook/ports.py).
        "reuse_port": True,
        # Longer than the API server's idle connection timeout (Go's default is 90 s), so the
        # server never closes a connection the client is about to reuse.
        "keepalive": 120,
        "timeout": 30,
        "graceful_timeout": 20,
        "certfile": settings.cert,
        "keyfile": settings.key,
        "ssl_context": ServerContexts(),  # cert and key from one version of the files
        "control_socket_disable": True,  # read-only containers; nothing manages it at runtime
        "accesslog": None,
        "logger_class": AccessOffLogger,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "runway-webhook",
        "post_worker_init": settle_worker,
        # One metrics directory per server, which every worker writes (webhook/multiprocess.py),
        # and one table of the workers' open connections, which keeps them even
        # (webhook/balance.py).
        "on_starting": starting,
        "pre_fork": assign_row,
        "post_fork": claim_row,
        "child_exit": exited,
        "on_exit": server_exiting,
        "logconfig_dict": gunicorn_logconfig(
            {
                # -v: each allowed admission too (webhook/app.py logs those at DEBUG)
                "webhook": {"level": "DEBUG" if settings.verbose else "INFO"},
                "gunicorn.access": {"level": "WARNING", "handlers": ["stderr"], "propagate": False},
            }
        ),
    }


def starting(server: Any) -> None:
    """gunicorn's on_starting (master)."""
    server_starting(server)
    shares_starting(server)


def exited(server: Any, worker: Any) -> None:
    """gunicorn's child_exit (master)."""
    worker_exited(server, worker)
    release_row(server, worker)


def settle_worker(worker: Any) -> None:
    """Once a worker has built its app: move everything alive then (modules, schemas, compiled
    rules) out of the cyclic collector's reach. The collections that requests trigger then walk
    only the requests' own objects, not the whole heap of a worker (measured: bench/RESULTS.md).
    Frozen objects are still freed by reference counting when dropped (a registry replaced by
    the cluster watch); only reference cycles among them would stay.
    """
    gc.freeze()


# gunicorn's start line (gunicorn/arbiter.py), as it logs it
LISTENING = "Listening at: %s (%s)"


class AccessOffLogger(Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's logger, without the access line's work while that line is not written.

    gunicorn builds every request's access-log fields (a dict of some thirty atoms, the date
    formatted) whenever any logging configuration is given, and hands them to a logger that
    drops them here (gunicorn.access is at WARNING): 7% of a worker's GIL samples under load
    (bench/RESULTS.md). Whether the line would be written is decided once the configuration is
    applied (setup, which a reload runs again)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        enabled: bool = self.access_log_enabled and self.access_log.isEnabledFor(logging.INFO)
        self._access_log_enabled = enabled

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        # With reuse_port the master binds nothing (each worker binds a socket of its own), so
        # gunicorn's start line lists no listener: it names the address the workers bind.
        if msg == LISTENING and args and not args[0]:
            args = (", ".join(f"https://{address}" for address in self.cfg.bind), *args[1:])
        super().info(msg, *args, **kwargs)
