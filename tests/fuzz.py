"""`make fuzz`: generated AdmissionReviews of every hardening class, in process and over TLS.

In process (the Flask app, as gunicorn runs it): IN_PROCESS reviews per class. Over TLS (the
real `runway serve` on 127.0.0.1): OVER_TLS reviews of all classes from a few kept-alive
connections, while SLOW_CLIENTS slow connections attack the same server. Printed: the counts per
class, answers with a 5xx status, answers that were not an AdmissionReview echoing the uid,
tracebacks logged, and answers slower than 1 s. Exit status 1 when any of those is not 0.
Also run: the duplicate-key class on the YAML reader (not reviews; counted apart).
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from providers.errors import SourceError
from renderer.sources import parse_documents
from tests.support.generated import (
    any_request_reviews,
    credential_objects,
    other_kind_reviews,
    out_of_range_objects,
    yaml_with_duplicate,
)
from tests.support.slowclients import SlowClients
from tests.support.webhook import Webhook, review, start_webhook
from webhook.app import create_app
from webhook.settings import Settings

SLOW = 1.0  # seconds: an answer slower than this counts as a failure
SLOW_CLIENTS = 50
TLS_CONNECTIONS = 4
PATHS = ("/mutate", "/validate")


def _reviews(kind: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(path, review) pairs of one class."""
    paths = st.sampled_from(PATHS)
    if kind == "request-shapes":
        return st.tuples(paths, any_request_reviews())
    if kind == "numbers":
        return st.tuples(paths, out_of_range_objects().map(lambda case: review(case[0])))
    if kind == "secrets":
        return st.tuples(paths, credential_objects().map(lambda case: review(case[0])))
    route = {
        "InferenceProviderConfig": "/validate-inferenceproviderconfig",
        "ExternalModelProvider": "/validate-externalmodelprovider",
    }
    return other_kind_reviews().map(lambda doc: (route[doc["request"]["kind"]["kind"]], doc))


CLASSES = ("request-shapes", "numbers", "secrets", "other-kinds")
SHARE = {"request-shapes": 0.4, "numbers": 0.25, "secrets": 0.15, "other-kinds": 0.2}


@dataclass
class Tally:
    reviews: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    malformed: int = 0
    slow: int = 0
    slowest: float = 0.0
    tracebacks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, uid: str, status: int, body: bytes, seconds: float) -> None:
        with self.lock:
            self.reviews[kind] += 1
            self.slowest = max(self.slowest, seconds)
            self.slow += seconds > SLOW
            self.server_errors += status >= 500
            self.malformed += not _well_formed(status, body, uid)


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

    def emit(self, record: logging.LogRecord) -> None:
        self.tally.tracebacks += 1


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    """Call `each` on `count` generated examples (generation only: no shrinking, no database)."""
    run = settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(each))
    run()


def in_process(count: int, tally: Tally) -> None:
    client: FlaskClient = create_app(Settings()).test_client()
    counter = _ErrorCounter(tally)
    logging.getLogger().addHandler(counter)
    try:
        for kind in CLASSES:
            _drive(_reviews(kind), round(count * SHARE[kind]), _poster(client, kind, tally))
    finally:
        logging.getLogger().removeHandler(counter)


def _poster(client: FlaskClient, kind: str, tally: Tally) -> Callable[[Any], None]:
    def one(case: tuple[str, dict[str, Any]]) -> None:
        path, document = case
        started = time.perf_counter()
        answer = client.post(path, data=json.dumps(document), content_type="application/json")
        seconds = time.perf_counter() - started
        tally.record(kind, document["request"]["uid"], answer.status_code, answer.data, seconds)

    return one


def _collector(kind: str, cases: list[tuple[str, str, dict[str, Any]]]) -> Callable[[Any], None]:
    def one(case: tuple[str, dict[str, Any]]) -> None:
        cases.append((kind, *case))

    return one


def over_tls(count: int, tally: Tally, workdir: Path) -> None:
    hook = start_webhook(workdir)
    attack = SlowClients(hook.port, hook.context(), count=SLOW_CLIENTS, seconds=3600, sustain=True)
    try:
        attack.start()
        if not attack.wait_started():
            raise RuntimeError("the slow clients could not connect")
        cases: list[tuple[str, str, dict[str, Any]]] = []
        for kind in CLASSES:
            _drive(_reviews(kind), round(count * SHARE[kind]), _collector(kind, cases))
        threads = [
            threading.Thread(target=_send, args=(hook, cases[i::TLS_CONNECTIONS], tally))
            for i in range(TLS_CONNECTIONS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=3600)
    finally:
        attack.seconds = 0
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
        tally.record(kind, document["request"]["uid"], status, answer, time.perf_counter() - started)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz")
    parser.add_argument("--in-process", type=int, default=90_000)
    parser.add_argument("--tls", type=int, default=10_000)
    parser.add_argument("--yaml", type=int, default=5_000)
    args = parser.parse_args(argv)
    started = time.monotonic()
    local, remote = Tally(), Tally()
    in_process(args.in_process, local)
    with tempfile.TemporaryDirectory() as work:
        over_tls(args.tls, remote, Path(work))
    generated, refused = yaml_duplicates(args.yaml)
    total = sum(local.reviews.values()) + sum(remote.reviews.values())
    for name, tally in (("in process", local), (f"over TLS, {SLOW_CLIENTS} slow clients attacking", remote)):
        per_class = ", ".join(f"{k} {v}" for k, v in sorted(tally.reviews.items()))
        print(f"{name}: {sum(tally.reviews.values())} reviews ({per_class})")
        print(
            f"  5xx {tally.server_errors}, not a well-formed AdmissionReview {tally.malformed}, "
            f"tracebacks {tally.tracebacks}, slower than {SLOW:.0f} s {tally.slow} "
            f"(slowest {tally.slowest * 1000:.0f} ms)"
        )
    print(f"YAML with a duplicate key: {generated} documents, {refused} refused naming it")
    print(f"total {total} generated reviews in {time.monotonic() - started:.0f} s")
    failures = sum(t.server_errors + t.malformed + t.tracebacks + t.slow for t in (local, remote))
    return 1 if failures or refused != generated else 0


if __name__ == "__main__":
    sys.exit(main())
