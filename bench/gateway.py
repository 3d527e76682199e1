"""Time from sync to Ready: gateway-sync passes (in process) against the real LiteLLM proxy
(tests/support/litellm_server.py; only the persistence of /model/new|update|delete is
substituted) for N provider models: one that registers them all and confirms each, one with
nothing to change, one after a single model's base URL changed, and one that deletes them all.
Every pass prints its time, its Ready count and the requests it sent to LiteLLM by kind (counted
at the sync's own client, tests/support/litellm.py CountingLiteLLM).

The passes share one Syncer whose View of LiteLLM is trusted for RELIST seconds, as a loop's
passes are for one --interval (gateway/run.py): the first pass lists LiteLLM, the others use
what it learned. Rows for 1,000 models are checked against issue #46's targets.

LiteLLM registers one model per request (gateway/sync.py cites where), so registering N models
costs at least N of LiteLLM's own /model/new, and confirming them one /model/info listing: the
floor row times FLOOR_WRITES bare /model/new sent one after another over one kept-alive
connection just before the register pass, with the LiteLLM process's CPU per write
(/proc/PID/stat), and one bare GET /model/info of the N entries right after it; the register
pass is printed as a ratio to that floor (N writes and one listing).

`python -m bench.gateway [--sizes 1,10,50,1000] [--profile]`: --profile prints a cProfile of
the 1,000-model register pass (the largest size given).
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import json
import os
import pstats
import statistics
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gateway.apikeys import FileSecrets
from gateway.merge import Plan
from gateway.sync import Syncer
from tests.support.answers import FakeUpstream
from tests.support.litellm import (
    MASTER_KEY,
    PROVIDER_SECRET,
    CountingLiteLLM,
    Proxy,
    providers_plan,
    running_proxy,
)

SIZES = (1, 10, 50, 1000)
TARGETS = {"register": 5.0, "one changed": 0.5}  # seconds, for 1,000 models (issue #46)
TARGET_SIZE = 1000
FLOOR_WRITES = 250  # bare /model/new timed for the floor (then deleted, untimed)
TARGET_FLOOR_RATIO = 1.25  # the register pass against LiteLLM's own floor at its size
RELIST = 3600.0  # every pass of the bench falls within one interval of the first


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.gateway")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    upstream = FakeUpstream("bench").start()
    try:
        with (
            tempfile.TemporaryDirectory() as work,
            running_proxy(Path(work), upstream.url) as proxy,
        ):
            print(f"load average {_load()} (before)")
            seconds: dict[tuple[int, str], float] = {}
            floor = 0.0
            for size in sizes:
                profile = args.profile and size == max(sizes)
                if size == max(sizes):
                    floor = _floor(proxy, upstream.url) * size
                seconds.update(_size(proxy, upstream.url, size, profile=profile))
                if size == max(sizes):
                    floor += seconds[(size, "listing")]
            _listing(proxy)
            _summary(seconds, floor, max(sizes))
            print(f"load average {_load()} (after)")
    finally:
        upstream.stop()


def _size(proxy: Proxy, upstream: str, size: int, *, profile: bool) -> dict[tuple[int, str], float]:
    """The four passes of one size; their seconds by (size, pass)."""
    client = CountingLiteLLM(proxy.url, MASTER_KEY)
    syncer = Syncer(client, FileSecrets([PROVIDER_SECRET]), relist=RELIST)
    passes = (
        ("register", providers_plan(size, upstream)),
        ("unchanged", providers_plan(size, upstream)),
        ("one changed", providers_plan(size, upstream, moved=f"{upstream}/moved")),
        ("delete", Plan()),
    )
    seconds = {}
    for label, target in passes:
        profiler = cProfile.Profile() if profile and label == "register" else None
        cpu = _cpu(proxy)
        start = time.perf_counter()
        if profiler is not None:
            results = profiler.runcall(syncer.reconcile, target)
        else:
            results = syncer.reconcile(target)
        elapsed = time.perf_counter() - start
        ready = sum(r.registered for r in results)
        seconds[(size, label)] = elapsed
        cpu = _cpu(proxy) - cpu
        requests = ", ".join(f"{k} {v}" for k, v in client.take().items()) or "none"
        print(
            f"gateway-sync {size:>4} models, {label:<11} {elapsed * 1000:>7.0f} ms "
            f"({ready} Ready; LiteLLM CPU {cpu * 1000:.0f} ms); requests: {requests}"
        )
        if profiler is not None:
            _print_profile(profiler)
        if label == "register":
            seconds[(size, "listing")] = _bare_listing(proxy)
    return seconds


def _floor(proxy: Proxy, upstream: str) -> float:
    """Seconds per bare /model/new: FLOOR_WRITES sent one after another over one kept-alive
    connection, answers read whole; then the entries are deleted (untimed)."""
    target = urllib.parse.urlsplit(proxy.url)
    connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
    headers = {"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"}

    def post(route: str, body: dict[str, Any]) -> None:
        connection.request("POST", route, body=json.dumps(body), headers=headers)
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200, (route, answer.status)

    ids = [f"floor-{i}" for i in range(FLOOR_WRITES)]
    cpu = _cpu(proxy)
    start = time.perf_counter()
    for mid in ids:
        params = {"model": "openai/floor", "api_base": upstream, "api_key": "sk-floor"}
        post("/model/new", {"model_name": mid, "litellm_params": params, "model_info": {"id": mid}})
    elapsed = time.perf_counter() - start
    cpu = _cpu(proxy) - cpu
    for mid in ids:
        post("/model/delete", {"id": mid})
    connection.close()
    print(
        f"floor: {FLOOR_WRITES} bare /model/new in {elapsed * 1000:.0f} ms "
        f"({elapsed / FLOOR_WRITES * 1000:.1f} ms each; LiteLLM CPU "
        f"{cpu / FLOOR_WRITES * 1000:.1f} ms each); load average {_load()}"
    )
    return elapsed / FLOOR_WRITES


def _bare_listing(proxy: Proxy) -> float:
    """Seconds of one GET /model/info read whole (the listing a pass confirms with)."""
    target = urllib.parse.urlsplit(proxy.url)
    connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
    cpu = _cpu(proxy)
    start = time.perf_counter()
    connection.request("GET", "/model/info", headers={"Authorization": f"Bearer {MASTER_KEY}"})
    size = len(connection.getresponse().read())
    elapsed = time.perf_counter() - start
    cpu = _cpu(proxy) - cpu
    connection.close()
    print(
        f"floor: one bare GET /model/info, {size} bytes, in {elapsed * 1000:.0f} ms "
        f"(LiteLLM CPU {cpu * 1000:.0f} ms)"
    )
    return elapsed


def _cpu(proxy: Proxy) -> float:
    """CPU seconds (user and system) the LiteLLM process has used."""
    fields = Path(f"/proc/{proxy.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _listing(proxy: Proxy) -> None:
    samples = []
    for _ in range(20):
        t0 = time.perf_counter()
        proxy.models()
        samples.append(time.perf_counter() - t0)
    print(f"LiteLLM GET /v1/models median {statistics.median(samples) * 1000:.1f} ms")


def _summary(seconds: dict[tuple[int, str], float], floor: float, size: int) -> None:
    """The rows against issue #46's targets, and the register pass against LiteLLM's floor
    (`floor` seconds for `size` models)."""
    for label, target in TARGETS.items():
        got = seconds.get((TARGET_SIZE, label))
        if got is None:
            continue
        verdict = "PASS" if got <= target else "MISS"
        print(
            f"target {TARGET_SIZE} models {label}: {got:.2f} s against <= {target:g} s "
            f"(ratio {got / target:.2f}) {verdict}; load average {_load()}"
        )
    got = seconds.get((size, "register"))
    if got is not None and floor:
        ratio = got / floor
        verdict = "PASS" if ratio <= TARGET_FLOOR_RATIO else "MISS"
        print(
            f"target {size} models register / LiteLLM floor ({floor:.2f} s: {size} bare "
            f"/model/new and one /model/info): {ratio:.2f} against <= {TARGET_FLOOR_RATIO:g} "
            f"{verdict}; load average {_load()}"
        )


def _print_profile(profiler: cProfile.Profile) -> None:
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(15)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        print(f"profile of the register pass, by {key}:")
        print("\n".join(f"  {line}" for line in lines[-16:]))


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
