"""The server's metrics directory: one private PROMETHEUS_MULTIPROC_DIR per gunicorn master.

gunicorn hooks (webhook/gunicorn_options.py): `server_starting` creates the directory before any
worker exists, `worker_exited` drops a dead worker's live gauges (its counters stay: totals never
go back), and `server_exiting` removes the directory. A directory left from an earlier server is
never reused, so no old worker's counts are added in.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any

from prometheus_client import multiprocess, values

from webhook.ports import PortInUse, check_port_free

log = logging.getLogger(__name__)
ENV = "PROMETHEUS_MULTIPROC_DIR"


def server_starting(server: Any) -> None:
    """gunicorn's on_starting (master): refuse a busy port; create the metrics directory."""
    for address in server.cfg.address:
        if isinstance(address, tuple):
            try:
                check_port_free(str(address[0]), int(address[1]))
            except PortInUse as err:
                # gunicorn prints a RuntimeError as one line ("Error: ...") and exits 1; any
                # other exception here would reach the user as a traceback.
                raise RuntimeError(str(err)) from None
    directory = tempfile.mkdtemp(prefix="runway-metrics-")
    os.environ[ENV] = directory  # inherited by every worker; Settings.from_env reads it
    # prometheus_client chooses how values are stored once, when first imported, from this
    # variable; the master imported it before the directory existed. Choose again, before any
    # worker is forked (each inherits the choice).
    values.ValueClass = values.get_value_class()
    log.info("metrics directory created path=%s", directory)


def worker_exited(server: Any, worker: Any) -> None:
    """gunicorn's child_exit (master): the worker's live gauges leave the sums."""
    directory = os.environ.get(ENV, "")
    if directory:
        multiprocess.mark_process_dead(worker.pid, directory)


def server_exiting(server: Any) -> None:
    """gunicorn's on_exit (master): remove the directory."""
    directory = os.environ.pop(ENV, "")
    if directory:
        shutil.rmtree(directory, onerror=_log_leftover)


def _log_leftover(function: Any, path: str, error: Any) -> None:
    log.warning("metrics directory not removed path=%s: %s", path, error[0].__name__)
