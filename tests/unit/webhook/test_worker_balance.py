"""The workers' shared table of open connections (webhook/balance.py): who is over an even share."""

from __future__ import annotations

import os
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from webhook.balance import ConnectionShares, assign_row, claim_row, release_row, shares_starting


def _master(workers: int) -> SimpleNamespace:
    server = SimpleNamespace(cfg=SimpleNamespace(workers=workers), WORKERS={})
    shares_starting(server)
    return server


def _fork(server: SimpleNamespace, pid: int) -> SimpleNamespace:
    """What gunicorn's master does around a fork: pre_fork, then the worker is listed."""
    worker = SimpleNamespace(pid=pid)
    assign_row(server, worker)
    server.WORKERS[pid] = worker
    return worker


def _worker_view(server: SimpleNamespace, worker: SimpleNamespace) -> ConnectionShares:
    """The worker's own view of the table: its row claimed, as post_fork does in the child.
    (A forked worker has its own copy of the master's object over the same shared memory; in
    one process the copy is made here.)"""
    claim_row(server, worker)
    shares: ConnectionShares = worker.connection_shares
    view = ConnectionShares.__new__(ConnectionShares)
    view.__dict__.update(shares.__dict__)
    shares.row = -1  # the master's object (shared in this test) stays the master's
    return view


def _workers(counts: list[int]) -> list[ConnectionShares]:
    server = _master(len(counts))
    views = [_worker_view(server, _fork(server, 100 + i)) for i in range(len(counts))]
    for view, count in zip(views, counts, strict=True):
        view.publish(count)
    return views


def test_a_worker_holding_six_of_eight_is_over_its_share_and_the_other_is_not() -> None:
    busy, idle = _workers([6, 2])

    assert busy.over_share(6)
    assert not idle.over_share(2)


def test_an_even_spread_closes_nothing() -> None:
    views = _workers([4, 4])

    assert [view.over_share(4) for view in views] == [False, False]


def test_one_worker_alone_is_never_over_its_share() -> None:
    (only,) = _workers([8])

    assert not only.over_share(8)


def test_a_share_rounds_up_so_an_odd_total_leaves_the_larger_half_in_place() -> None:
    larger, smaller = _workers([4, 3])

    assert not larger.over_share(4)
    assert not smaller.over_share(3)


def test_an_exited_worker_leaves_the_count_and_its_row_is_given_again() -> None:
    server = _master(2)
    first, second = _fork(server, 101), _fork(server, 102)
    busy = _worker_view(server, first)
    gone = _worker_view(server, second)
    busy.publish(6)
    gone.publish(2)
    assert busy.over_share(6)

    release_row(server, second)
    del server.WORKERS[102]

    assert not busy.over_share(6)
    assert _fork(server, 103).connection_row == second.connection_row


def test_rows_are_distinct_for_workers_forked_before_any_claimed_its_row() -> None:
    server = _master(3)

    rows = [_fork(server, pid).connection_row for pid in (101, 102, 103)]

    assert sorted(rows) == [0, 1, 2]


def test_a_worker_forked_when_every_row_is_taken_takes_no_part() -> None:
    server = _master(1)  # two rows
    for pid in (101, 102):
        _worker_view(server, _fork(server, pid)).publish(1)
    late = _fork(server, 103)

    view = _worker_view(server, late)

    assert late.connection_row == -1
    assert not view.over_share(50)


def test_the_table_is_shared_with_a_forked_process() -> None:
    server = _master(2)
    parent_side = _worker_view(server, _fork(server, 101))
    child_worker = _fork(server, 102)
    pid = os.fork()
    if pid == 0:  # the child: a worker process writing its count
        _worker_view(server, child_worker).publish(7)
        os._exit(0)
    os.waitpid(pid, 0)

    assert not parent_side.over_share(4)  # 4 and the child's 7: an even share is 6
    assert parent_side.over_share(9)  # 9 and 7: an even share is 8


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=8))
def test_only_a_worker_above_an_even_share_closes_and_the_least_loaded_never_does(
    counts: list[int],
) -> None:
    views = _workers(counts)
    total, workers = sum(counts), len(counts)

    over = [view.over_share(count) for view, count in zip(views, counts, strict=True)]

    assert over == [count > -(-total // workers) for count in counts]
    assert not over[counts.index(min(counts))]
