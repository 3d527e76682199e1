"""The render's worker processes: pools forked from the render (what they work on reaches them
by copy-on-write), whose workers die with it."""

from __future__ import annotations

import os
import signal
from typing import Any

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def cores() -> int:
    """The cores this process may run on (a CI runner's cgroup or `taskset` may give fewer
    than the machine has), the count of workers a pool of the render's is sized by."""
    return len(os.sched_getaffinity(0))


def fork_pool(count: int) -> Any:
    """A multiprocessing Pool of `count` forked workers (use it as a context)."""
    # imported only here: a render of a few objects never starts a pool (3 ms of imports)
    import multiprocessing  # noqa: PLC0415

    pool_of = multiprocessing.get_context("fork").Pool
    return pool_of(count, initializer=die_with, initargs=(os.getpid(),))


def die_with(parent: int) -> None:
    """A pool worker's start: it dies when the render that forked it does. Killed alone (a CI
    job's timeout sends SIGKILL to the render, not to its group), the render left its workers
    rendering their tasks for nothing and holding the repository's lock, inherited at the fork,
    so that the next render was refused as "another render is running" until they finished.
    Linux's PR_SET_PDEATHSIG: the kernel kills the worker when its parent dies."""
    import ctypes  # noqa: PLC0415 - in the workers only

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end after their current task
        return
    if os.getppid() != parent:  # the render died before the worker asked
        os._exit(1)
