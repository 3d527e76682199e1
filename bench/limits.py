"""The worst-case rows of `make bench`: one review per hardening class at the input limits
(tests/support/limits.py), answered in process by the webhook app; CPU time of the answering
thread, and how much of it the garbage collector took. Bounded: a fixed corpus, ROUNDS each."""

from __future__ import annotations

import gc
import json
import statistics

from flask.testing import FlaskClient

from tests.support.limits import cases
from tests.support.slowest import GcClock, Timed, timing
from webhook.app import create_app
from webhook.settings import Settings

ROUNDS = 5
TARGET_MS = 1000.0  # issue 13: no answer slower than 1 s


def rows() -> list[tuple[str, str, int, Timed]]:
    """(class, case, body bytes, the median answer's times) per case."""
    client: FlaskClient = create_app(Settings()).test_client()
    clock = GcClock()
    clock.start()
    out = []
    try:
        for case in cases():
            body = json.dumps(case.document)
            times: list[Timed] = []
            for _ in range(ROUNDS):
                gc.collect()  # each round starts from the same heap
                with timing(clock) as timed:
                    client.post(case.path, data=body, content_type="application/json")
                times += timed
            median = sorted(times, key=lambda t: t.cpu or 0.0)[len(times) // 2]
            out.append((case.kind, case.name, len(body), median))
    finally:
        clock.stop()
    return out


def main() -> None:
    print(f"Worst cases at the input limits (in process, median of {ROUNDS}, CPU of the thread):")
    table = rows()
    for kind, name, size, t in table:
        cpu, collected = (t.cpu or 0.0) * 1000, (t.gc or 0.0) * 1000
        print(
            f"  {kind:14} {name:45} {size / 2**20:5.2f} MiB  cpu {cpu:7.1f} ms "
            f"(collector {collected:6.1f} ms)  wall {t.wall * 1000:7.1f} ms"
        )
    worst = max((t.cpu or 0.0) * 1000 for *_, t in table)
    typical = statistics.median((t.cpu or 0.0) * 1000 for *_, t in table)
    print(
        f"  worst {worst:.1f} ms CPU, median {typical:.1f} ms "
        f"(target ≤ {TARGET_MS:.0f} ms: ratio {worst / TARGET_MS:.2f})"
    )


if __name__ == "__main__":
    main()
