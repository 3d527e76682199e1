"""Connections spread evenly over the workers: each worker's open connections, shared.

Each worker listens on its own SO_REUSEPORT socket and the kernel deals every new connection
to one of them by a hash of its addresses: a random deal. Eight keep-alive connections over two
workers came out (5,3) or (6,2) as often as (4,4), and (7,1) one time in sixteen; the worker
holding six was bound by its GIL while the other waited (bench/RESULTS.md).

The master maps a small shared table before it forks any worker (`server_starting`), gives each
worker a row of it (`assign_row`, gunicorn's pre_fork) and clears the row of a worker that
exits (`release_row`). A worker writes how many connections it serves into its row
(`ConnectionShares.publish`; the worker decides which count: webhook/worker.py counts those that
have sent a whole request) and, after answering a request, asks whether it serves more than its
even share of all the workers' connections (`ConnectionShares.over_share`): then it answers
"Connection: close" and the client's next connection is dealt again. One worker, or an even
spread, never closes anything; a deal that keeps landing badly is dealt again until it is even.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

_PID, _COUNT = 0, 1  # the two int64 columns of a row


class ConnectionShares:
    """Rows of (pid, open connections) in memory shared by the master and its workers: two per
    configured worker, so that the workers of a reload overlap the old ones. A worker forked
    when every row is taken has none: it takes no part (it is not counted and closes nothing)."""

    def __init__(self, workers: int) -> None:
        self.rows = 2 * max(workers, 1)
        self._memory = mmap.mmap(-1, self.rows * 2 * 8)  # anonymous, shared: inherited by fork
        self._table = memoryview(self._memory).cast("q")
        self.row = -1  # this worker's row, set in the worker (claim_row); -1 in the master
        self._published = 0  # what this worker last wrote into its row

    def free_row(self, taken: set[int]) -> int:
        """(master) The first row not in `taken` (the rows of the live workers); -1 if none."""
        return next((row for row in range(self.rows) if row not in taken), -1)

    def claim(self, row: int, pid: int) -> None:
        self._table[row * 2 + _COUNT] = self._published = 0
        self._table[row * 2 + _PID] = pid

    def release(self, row: int) -> None:
        """(master) The row of a worker that exited: free, counting nothing."""
        self._table[row * 2 + _PID] = 0
        self._table[row * 2 + _COUNT] = 0

    def publish(self, connections: int) -> None:
        """(worker) How many connections this worker holds now (written when it changed)."""
        if connections != self._published and self.row >= 0:
            self._table[self.row * 2 + _COUNT] = self._published = connections

    def over_share(self, connections: int) -> bool:
        """(worker) Whether `connections` (this worker's) is more than an even share, rounded
        up, of every live worker's connections."""
        if self.row < 0:
            return False
        table = self._table
        workers = total = 0
        for row in range(self.rows):
            if table[row * 2 + _PID]:
                workers += 1
                total += connections if row == self.row else table[row * 2 + _COUNT]
        return workers > 1 and connections * workers > total + workers - 1


def shares_starting(server: Any) -> None:
    """(master, on_starting) The shared table, before any worker is forked."""
    server.connection_shares = ConnectionShares(server.cfg.workers)


def assign_row(server: Any, worker: Any) -> None:
    """(master, pre_fork) The new worker's row: one no live worker holds. (The workers forked
    before it are in server.WORKERS with their rows, claimed or not yet.)"""
    shares: ConnectionShares | None = getattr(server, "connection_shares", None)
    if shares is not None:
        worker.connection_shares = shares
        taken = {getattr(w, "connection_row", -1) for w in server.WORKERS.values()}
        worker.connection_row = shares.free_row(taken)


def claim_row(server: Any, worker: Any) -> None:
    """(worker, post_fork) Take the row the master chose, under this process's pid."""
    shares: ConnectionShares | None = getattr(worker, "connection_shares", None)
    if shares is not None and worker.connection_row >= 0:
        shares.row = worker.connection_row
        shares.claim(shares.row, os.getpid())


def release_row(server: Any, worker: Any) -> None:
    """(master, child_exit) The exited worker's row is free and counts nothing."""
    shares: ConnectionShares | None = getattr(server, "connection_shares", None)
    row = getattr(worker, "connection_row", -1)
    if shares is not None and row >= 0:
        shares.release(row)
