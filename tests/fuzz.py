"""`make fuzz`: generated AdmissionReviews of every hardening class, in process and over TLS.

In process (the Flask app, as gunicorn runs it): IN_PROCESS reviews per class. Over TLS (the
real `runway serve` on 127.0.0.1): OVER_TLS reviews of all classes from a few kept-alive
connections, while SLOW_CLIENTS slow connections attack the same server. Printed: the counts per
class, answers with a 5xx status, answers that were not an AdmissionReview echoing the uid,
tracebacks logged, and answers slower than 1 s. Exit status 1 when any of those is not 0.
Also run: the duplicate-key class on the YAML reader (not reviews; counted apart), and the
costliest review of each class at the input limits (tests/support/limits.py; "at-the-limits").

While the slow clients attack, a normal client opens fresh connections and sends a review, as
the API server does; its TLS handshake and request latency (p50/p99/max) are printed, and a
probe slower than 1 s is a failure. Then every module in AREAS (tests/fuzzing/) runs with
`--areas` examples; each prints one line, and any failure it reports fails the run.

The slowest answers of each class are printed with their wall time, CPU time and garbage
collection time (in process), and saved with their reviews to .cache/fuzz/slowest.json;
`--replay FILE` answers them again in process (`--profile` under cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import http.client
import json
import logging
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.sources import parse_documents
from tests.fuzzing import Report
from tests.fuzzing import cel as cel_area
from tests.fuzzing import crdrules as crdrules_area
from tests.fuzzing import gateway as gateway_area
from tests.fuzzing import render as render_area
from tests.fuzzing import server as server_area
from tests.fuzzing import sources as sources_area
from tests.fuzzing import status as status_area
from tests.fuzzing import ui as ui_area
from tests.support import limits as at_the_limits
from tests.support.generated import (
    any_request_reviews,
    credential_objects,
    other_kind_reviews,
    out_of_range_objects,
    yaml_with_duplicate,
)
from tests.support.slowclients import Probe, SlowClients
from tests.support.slowest import Answer, GcClock, Slowest, Timed, load, save, timing
from tests.support.webhook import Webhook, review, start_webhook
from webhook.app import create_app
from webhook.settings import Settings

SLOW = 1.0  # seconds: an answer slower than this counts as a failure
# Hostile-input areas beyond reviews (tests/fuzzing/): each `run(examples) -> Report`.
AREAS = (
    server_area,
    cel_area,
    crdrules_area,
    gateway_area,
    render_area,
    sources_area,
    status_area,
    ui_area,
)
SLOW_CLIENTS = 50
TLS_CONNECTIONS = 4
PATHS = ("/mutate", "/validate")
# Examples per hypothesis run. A run keeps every example's choices (its tree of what it has
# generated): 20,000 examples in one run held a million objects, and the collector's full pass
# over them (up to 1.7 s under load) landed in whichever answer was allocating at the time. In
# runs of 500, with the finished run's garbage collected between runs (outside any timer), the
# heap the answers see stays that of the webhook plus one run.
BATCH = 500


def _reviews(kind: str) -> st.SearchStrategy[list[tuple[str, dict[str, Any]]]]:
    """The (path, review) pairs for one generated example of a class: a ModelDeployment review
    goes to both the mutating and the validating endpoint, as the API server sends it."""
    both = lambda doc: [(path, doc) for path in PATHS]  # noqa: E731  # a one-line mapping
    if kind == "request-shapes":
        return any_request_reviews().map(both)
    if kind == "numbers":
        return out_of_range_objects().map(lambda case: both(review(case[0])))
    if kind == "secrets":
        return credential_objects().map(lambda case: both(review(case[0])))
    route = {
        "InferenceProviderConfig": "/validate-inferenceproviderconfig",
        "ExternalModelProvider": "/validate-externalmodelprovider",
    }
    return other_kind_reviews().map(lambda doc: [(route[doc["request"]["kind"]["kind"]], doc)])


CLASSES = ("request-shapes", "numbers", "secrets", "other-kinds")
# Not generated: the costliest review of each class at the input limits (tests/support/limits.py),
# sent once each after the generated ones, and counted apart.
AT_THE_LIMITS = "at-the-limits"
SHARE = {"request-shapes": 0.4, "numbers": 0.25, "secrets": 0.15, "other-kinds": 0.2}
# In process, per 100 examples: 40+25+15 ModelDeployment examples sent twice, 20 others once,
# so 180 reviews: 50,000 examples give 90,000 reviews; over TLS 6,000 give 10,800.


@dataclass
class Tally:
    examples: Counter[str] = field(default_factory=Counter)  # generated by hypothesis
    reviews: Counter[str] = field(default_factory=Counter)  # sent
    tracebacks_by_class: Counter[str] = field(default_factory=Counter)
    slow_by_class: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    malformed: int = 0
    slow: int = 0  # wall time over SLOW: what the API server would wait (the verdict)
    slow_cpu: int = 0  # CPU time over SLOW (in process): the work, without the machine's load
    slowest: Slowest = field(default_factory=Slowest)
    tracebacks: int = 0
    gc: GcClock = field(default_factory=GcClock)  # in process only
    probes: list[Probe] = field(default_factory=list)  # a normal client's fresh connections
    probe_report: Report = field(default_factory=lambda: Report("normal client"))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, answer: Answer, status: int, body: bytes) -> None:
        kind, seconds = answer.kind, answer.timed.wall
        with self.lock:
            self.reviews[kind] += 1
            self.slowest.add(answer)
            self.slow += seconds > SLOW
            self.slow_cpu += (answer.timed.cpu or 0.0) > SLOW
            self.slow_by_class[kind] += seconds > SLOW
            self.server_errors += status >= 500
            self.malformed += not _well_formed(status, body, answer.document["request"]["uid"])


def _well_formed(status: int, body: bytes, uid: str) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    if status != 200:
        return False
    response = answer.get("response", {})
    code = response.get("status", {}).get("code", 200)
    return bool(answer.get("kind") == "AdmissionReview" and response.get("uid") == uid) and (
        code < 500 or code == 503
    )


class _ErrorCounter(logging.Handler):
    def __init__(self, tally: Tally) -> None:
        super().__init__(level=logging.ERROR)
        self.tally = tally
        self.kind = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.tally.tracebacks += 1
        self.tally.tracebacks_by_class[self.kind] += 1


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    """Call `each` on `count` generated examples (generation only: no shrinking, no database), in
    runs of at most BATCH examples with a full collection between them (see BATCH)."""
    for start in range(0, count, BATCH):
        run = settings(
            max_examples=min(BATCH, count - start),
            phases=[Phase.generate],
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )(given(strategy)(each))
        run()
        gc.collect()


def in_process(
    count: int, tally: Tally, classes: Sequence[str] = CLASSES, *, limits: bool = True
) -> None:
    client: FlaskClient = create_app(Settings()).test_client()
    counter = _ErrorCounter(tally)
    logging.getLogger().addHandler(counter)
    tally.gc.start()
    try:
        for kind in classes:
            counter.kind = kind
            _drive(_reviews(kind), round(count * SHARE[kind]), _poster(client, kind, tally))
        counter.kind = AT_THE_LIMITS
        post = _poster(client, AT_THE_LIMITS, tally)
        for case in at_the_limits.cases() if limits else ():
            post([(case.path, case.document)])
    finally:
        tally.gc.stop()
        logging.getLogger().removeHandler(counter)


def _poster(client: FlaskClient, kind: str, tally: Tally) -> Callable[[Any], None]:
    def one(cases: list[tuple[str, dict[str, Any]]]) -> None:
        tally.examples[kind] += 1
        for path, document in cases:
            body = json.dumps(document)
            with timing(tally.gc) as timed:
                answer = client.post(path, data=body, content_type="application/json")
            tally.record(Answer(kind, path, document, timed[0]), answer.status_code, answer.data)

    return one


def _collector(kind: str, cases: list[tuple[str, str, dict[str, Any]]]) -> Callable[[Any], None]:
    def one(pairs: list[tuple[str, dict[str, Any]]]) -> None:
        cases.extend((kind, path, document) for path, document in pairs)

    return one


def over_tls(
    count: int,
    tally: Tally,
    workdir: Path,
    classes: Sequence[str] = CLASSES,
    *,
    limits: bool = True,
) -> None:
    hook = start_webhook(workdir)
    attack = SlowClients(hook.port, hook.context(), count=SLOW_CLIENTS, seconds=3600, sustain=True)
    try:
        attack.start()
        if not attack.wait_started():
            raise RuntimeError("the slow clients could not connect")
        cases: list[tuple[str, str, dict[str, Any]]] = []
        for kind in classes:
            _drive(_reviews(kind), round(count * SHARE[kind]), _collector(kind, cases))
        limited = at_the_limits.cases() if limits else []
        cases += [(AT_THE_LIMITS, case.path, case.document) for case in limited]
        threads = [
            threading.Thread(target=_send, args=(hook, cases[i::TLS_CONNECTIONS], tally))
            for i in range(TLS_CONNECTIONS)
        ]
        done = threading.Event()
        prober = threading.Thread(
            target=lambda: tally.probes.extend(
                server_area.probe_while(hook, done, tally.probe_report, "over TLS")
            )
        )
        prober.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=3600)
        done.set()
        prober.join(timeout=120)
    finally:
        attack.stop()  # before the server, so no client spins reconnecting to nothing
        hook.stop()
    tally.tracebacks += hook.log_text().count("Traceback")


def _send(hook: Webhook, cases: list[tuple[str, str, dict[str, Any]]], tally: Tally) -> None:
    conn = http.client.HTTPSConnection("127.0.0.1", hook.port, context=hook.context(), timeout=30)
    for kind, path, document in cases:
        body = json.dumps(document).encode()
        started = time.perf_counter()
        for attempt in (1, 2):  # once more on a connection the server closed (keep-alive bound)
            try:
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                status, answer = response.status, response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if attempt == 2:
                    raise
                started = time.perf_counter()
        seconds = time.perf_counter() - started
        tally.record(Answer(kind, path, document, Timed(seconds)), status, answer)
    conn.close()


def yaml_duplicates(count: int) -> tuple[int, int]:
    """(documents generated, refused with the right message)."""
    counts = [0, 0]

    def one(case: tuple[str, int, str]) -> None:
        text, document, key = case
        counts[0] += 1
        try:
            list(parse_documents(text, "in.yaml"))
        except SourceError as err:
            message = str(err)
            counts[1] += message.startswith(f"in.yaml: document {document}: ") and message.endswith(
                f'duplicate key "{key}"'
            )

    _drive(yaml_with_duplicate(), count, one)
    return counts[0], counts[1]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz")
    parser.add_argument("--in-process", type=int, default=50_000, help="generated examples")
    parser.add_argument("--tls", type=int, default=6_000, help="generated examples (0: skip)")
    parser.add_argument("--yaml", type=int, default=5_000, help="documents (0: skip)")
    parser.add_argument("--class", dest="classes", action="append", choices=CLASSES)
    parser.add_argument("--areas", type=int, default=300, help="examples per area (0: skip)")
    parser.add_argument(
        "--limits",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also send the costliest review of each class at the input limits",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where slowest.json is written")
    parser.add_argument("--replay", type=Path, help="answer the reviews of a slowest.json again")
    parser.add_argument("--repeat", type=int, default=20, help="answers per replayed review")
    parser.add_argument("--profile", action="store_true", help="replay under cProfile")
    return parser


OUT = Path(".cache/fuzz")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.replay:
        replay(args.replay, args.repeat, profile=args.profile)
        return 0
    classes = args.classes or CLASSES
    started = time.monotonic()
    local, remote = Tally(), Tally()
    if args.in_process:
        in_process(args.in_process, local, classes, limits=args.limits)
    if args.tls:
        with tempfile.TemporaryDirectory() as work:
            over_tls(args.tls, remote, Path(work), classes, limits=args.limits)
    generated, refused = yaml_duplicates(args.yaml) if args.yaml else (0, 0)
    total = sum(local.reviews.values()) + sum(remote.reviews.values())
    for name, tally in (
        ("in process", local),
        (f"over TLS, {SLOW_CLIENTS} slow clients attacking", remote),
    ):
        _print_counts(name, tally)
    print(
        f"in process, garbage collection: {local.gc.total:.1f} s in "
        f"{'/'.join(map(str, local.gc.collections))} collections (generation 0/1/2)"
    )
    kept = [a.record() | {"where": "in process"} for a in local.slowest.answers()]
    kept += [a.record() | {"where": "over TLS"} for a in remote.slowest.answers()]
    print(f"slowest reviews saved to {save(kept, args.out)} (replay: --replay FILE)")
    print(f"YAML with a duplicate key: {generated} documents, {refused} refused naming it")
    limited = local.reviews[AT_THE_LIMITS] + remote.reviews[AT_THE_LIMITS]
    print(
        f"total {total} reviews ({total - limited} generated, {limited} at the input limits) "
        f"in {time.monotonic() - started:.0f} s"
    )
    reports = [area.run(args.areas) for area in AREAS] if args.areas else []
    for report in reports:
        print(report.line())
        for failure in report.failures[:20]:
            print(f"  {failure}")
    failures = sum(t.server_errors + t.malformed + t.tracebacks + t.slow for t in (local, remote))
    failures += len(remote.probe_report.failures) + sum(len(r.failures) for r in reports)
    return 1 if failures or refused != generated else 0


def _print_counts(name: str, tally: Tally) -> None:
    per_class = ", ".join(f"{k} {v}" for k, v in sorted(tally.reviews.items()))
    print(f"{name}: {sum(tally.reviews.values())} reviews ({per_class})")
    for what, by_class in (
        ("tracebacks", tally.tracebacks_by_class),
        ("slow", tally.slow_by_class),
    ):
        if +by_class:
            print(f"  {what} by class: {dict(sorted((+by_class).items()))}")
    print(
        f"  5xx {tally.server_errors}, not a well-formed AdmissionReview {tally.malformed}, "
        f"tracebacks {tally.tracebacks}, slower than {SLOW:.0f} s {tally.slow} "
        f"(slowest {tally.slowest.slowest() * 1000:.0f} ms)"
    )
    cpu = [a.timed.cpu or 0.0 for kind in tally.slowest.kinds() for a in tally.slowest.by_cpu(kind)]
    if cpu:  # in process: the answering thread's CPU time is known
        print(
            f"  in CPU time: slower than {SLOW:.0f} s {tally.slow_cpu} "
            f"(slowest {max(cpu) * 1000:.0f} ms)"
        )
    if tally.probes:
        server_area.latencies("probe", tally.probes, tally.probe_report)
        print(f"  a normal client meanwhile: {tally.probe_report.line()}")
        for failure in tally.probe_report.failures[:20]:
            print(f"    {failure}")
    for line in tally.slowest.report():
        print(line)


def replay(path: Path, repeat: int, *, profile: bool) -> None:
    """Answer every review saved in `path` again, `repeat` times each, in process; print the
    fastest and median wall, CPU and collector times (and, with `profile`, where the CPU went)."""
    client: FlaskClient = create_app(Settings()).test_client()
    clock = GcClock()
    clock.start()
    try:
        for record in load(path):
            if record["review"] is None:  # too large to save: rebuilt by tests/support/limits.py
                print(f"not saved, not replayed: {record['class']} {record['shape']}")
                continue
            body = json.dumps(record["review"])
            times: list[Timed] = []
            profiler = cProfile.Profile() if profile else None
            for _ in range(repeat):
                with timing(clock) as timed:
                    if profiler is not None:
                        profiler.enable()
                    client.post(record["path"], data=body, content_type="application/json")
                    if profiler is not None:
                        profiler.disable()
                times += timed
            print(_replayed(record, times))
            if profiler is not None:
                pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(15)
    finally:
        clock.stop()


def _replayed(record: dict[str, Any], times: list[Timed]) -> str:
    def ms(values: list[float]) -> str:
        return f"{min(values) * 1000:.1f}/{statistics.median(values) * 1000:.1f}"

    return (
        f"{record['where']}, {record['class']}: in the run wall {record['wall_ms']} ms, "
        f"cpu {record['cpu_ms']} ms, gc {record['gc_ms']} ms; replayed x{len(times)} "
        f"(min/median) wall {ms([t.wall for t in times])} ms, "
        f"cpu {ms([t.cpu or 0.0 for t in times])} ms, gc {ms([t.gc or 0.0 for t in times])} ms"
        f"\n  {record['path']} {record['shape']}"
    )


if __name__ == "__main__":
    sys.exit(main())
