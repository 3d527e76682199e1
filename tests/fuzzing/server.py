"""The server under hostile traffic (issue #18, class 5), for `make fuzz`.

* HTTP framing: generated chunked requests over TLS to the real `runway serve`, each with one
  defect (a 400 naming the parser's error, then "Connection: close") or none (answered 200).
* Request values in metrics and logs: admissions in process with any kind, group, uid, name and
  namespace; each writes exactly one log line, and /metrics stays parseable by
  prometheus_client with labels from the fixed sets only.
* Slow and idle connections: 50, then 200, then 400 clients sending a header line a second
  (reconnecting when ended; issue #40 item 11: 200 and 400 of them held every thread before,
  and a normal client's p99 was 2.7 s and 5.5 s), then 150 TCP connections that never send a ClientHello, then 150 that complete the
  TLS handshake and send nothing ("tlsidle"), while a normal client opens
  fresh connections and sends a review; its handshake and request latency (p50/p99/max) are the
  figures, and a probe slower than SLOW_PROBE or not answered 200 is a failure.
"""

from __future__ import annotations

import io
import json
import logging
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from kubeio.serverlogs import LOG_FORMAT
from tests.fuzzing import Report
from tests.support.builders import model_deployment
from tests.support.framing import Framing, malformed_chunked, valid_chunked
from tests.support.slowclients import IdleClients, Probe, SlowClients, probe
from tests.support.webhook import Webhook, review, start_webhook
from webhook.app import create_app
from webhook.logfields import field
from webhook.metrics import KINDS, OPERATIONS, OTHER
from webhook.settings import Settings

SLOW_PROBE = 1.0  # seconds: a normal client's handshake plus request slower than this fails
PROBE_EVERY = 0.05  # seconds between a normal client's probes (it should not be the load)
SLOW_HEADER_CLIENTS = (50, 200, 400)  # reconnecting; the webhook holds 400 (docs/security.md)
IDLE_CLIENTS = 150
PHASE_SECONDS = 12.0  # each attack, with the probe running throughout
REVIEW = json.dumps(review(model_deployment(gpu=1), uid="abc")).encode()
ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=300)
KIND_LABELS = {kind for _, kind in KINDS} | {OTHER}
SERIES_BOUND = len(KIND_LABELS) * len(OPERATIONS) * 2  # kind x operation x allowed


def _each(strategy: st.SearchStrategy[Any], count: int, check: Callable[[Any], None]) -> None:
    """`check` on `count` generated examples (generation only: no shrinking, no database)."""
    run = settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(check))
    run()


def framing(hook: Webhook, examples: int, report: Report) -> None:
    def check(case: Framing) -> None:
        report.cases += 1
        try:
            status, headers, body = hook.raw(case.data)
            answer = json.loads(body)
        except (OSError, ValueError) as err:
            report.failures.append(f"framing, {case.defect}: {type(err).__name__}")
            return
        if case.error is None:
            ok = status == 200 and answer.get("response") == {"uid": "abc", "allowed": True}
        else:
            expected = f"malformed request: {case.error}: "
            ok = (status, headers.get("connection")) == (400, "close") and str(
                answer.get("error", "")
            ).startswith(expected)
        if not ok:
            report.failures.append(f"framing, {case.defect}: {status} {body[:120]!r}")

    _each(malformed_chunked("/validate", REVIEW), examples, check)
    _each(valid_chunked("/validate", REVIEW), max(examples // 4, 1), check)


REQUEST_VALUES = st.tuples(
    st.one_of(ANY_TEXT, st.sampled_from(sorted({group for group, _ in KINDS}))),
    st.one_of(ANY_TEXT, st.sampled_from(sorted({kind for _, kind in KINDS}))),
    st.sampled_from(sorted(OPERATIONS)),
    ANY_TEXT,  # uid
    ANY_TEXT,  # name
    ANY_TEXT,  # namespace
)


def labels_and_logs(examples: int, report: Report) -> None:
    client: FlaskClient = create_app(Settings()).test_client()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger = logging.getLogger("webhook.app")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)  # as `runway serve -v` configures it (allowed ones: DEBUG)
    try:
        _each(REQUEST_VALUES, examples, lambda values: _admit_once(client, stream, values, report))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    _check_metrics(client.get("/metrics").get_data(as_text=True), report)


def _admit_once(client: FlaskClient, stream: io.StringIO, values: Any, report: Report) -> None:
    group, kind, operation, uid, name, namespace = values
    document = review(
        model_deployment(), operation=operation, kind=(group, "v1", kind), uid=uid or "u"
    )
    document["request"]["object"]["metadata"] = {"name": name, "namespace": namespace}
    if operation == "UPDATE":
        document["request"]["oldObject"] = document["request"]["object"]
    report.cases += 1
    stream.seek(0)
    stream.truncate()
    answer = client.post("/validate", data=json.dumps(document), content_type="application/json")
    lines = stream.getvalue().splitlines()
    wanted = f" uid={field(uid or 'u')} "
    if answer.status_code != 200 or len(lines) != 1 or wanted not in lines[0]:
        report.failures.append(f"log lines: {len(lines)} for uid {field(uid)[:40]}")


def _check_metrics(text: str, report: Report) -> None:
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as err:
        report.failures.append(f"metrics: not parseable: {err}")
        return
    requests = [s for f in families if f.name == "runway_admission_requests" for s in f.samples]
    kinds = {sample.labels.get("kind", "") for sample in requests}
    report.numbers["metric_series"] = len(requests)
    if len(requests) > SERIES_BOUND or not kinds <= KIND_LABELS:
        report.failures.append(f"metrics: {len(requests)} series, kinds {sorted(kinds)[:5]}")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def probe_while(hook: Webhook, until: threading.Event, report: Report, what: str) -> list[Probe]:
    """Fresh-connection probes, PROBE_EVERY apart, until `until` is set; failures counted."""
    probes: list[Probe] = []
    while not until.wait(PROBE_EVERY):
        report.cases += 1
        try:
            answer = probe(hook.port, hook.context(), REVIEW, timeout=30)
        except OSError as err:
            report.failures.append(f"{what}: probe failed: {type(err).__name__}: {err}")
            continue
        probes.append(answer)
        if answer.status != 200 or answer.handshake + answer.request > SLOW_PROBE:
            report.failures.append(
                f"{what}: probe {answer.status} in {answer.handshake * 1000:.0f} ms handshake "
                f"+ {answer.request * 1000:.0f} ms request"
            )
    return probes


def attacks(hook: Webhook, report: Report) -> None:
    for count in SLOW_HEADER_CLIENTS:
        slow = SlowClients(
            hook.port,
            hook.context(),
            count=count,
            seconds=PHASE_SECONDS,
            headers_only=True,
            sustain=True,
        )
        slow.start()
        slow.wait_started()
        latencies(f"slow{count}", _timed_probes(hook, report, f"{count} slow headers"), report)
        slow.stop()
        report.numbers[f"slow{count}_closed_max_s"] = round(max(slow.lifetimes, default=0.0), 1)
    for prefix, context in (("idle", None), ("tlsidle", hook.context())):
        idle = IdleClients(hook.port, count=IDLE_CLIENTS, context=context)
        idle.start()
        try:
            latencies(f"{prefix}{IDLE_CLIENTS}", _timed_probes(hook, report, prefix), report)
        finally:
            idle.stop()


def latencies(prefix: str, probes: Sequence[Probe], report: Report) -> None:
    """p50/p99/max of the probes' handshake and request times, in ms, into the report."""
    for name, values in (
        ("handshake", [p.handshake for p in probes]),
        ("request", [p.request for p in probes]),
    ):
        for label, share in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
            value = _percentile(values, share) * 1000 if values else float("nan")
            report.numbers[f"{prefix}_{name}_{label}_ms"] = round(value, 1)
    report.numbers[f"{prefix}_probes"] = len(probes)


def _timed_probes(hook: Webhook, report: Report, what: str) -> list[Probe]:
    done = threading.Event()
    timer = threading.Timer(PHASE_SECONDS, done.set)
    timer.start()
    try:
        return probe_while(hook, done, report, what)
    finally:
        timer.cancel()


def run(examples: int) -> Report:
    report = Report("server (HTTP framing, metric labels, log lines, slow and idle connections)")
    labels_and_logs(examples, report)
    with tempfile.TemporaryDirectory() as work:
        hook = start_webhook(Path(work))
        try:
            framing(hook, examples, report)
            attacks(hook, report)
        finally:
            hook.stop()
        if "Traceback" in hook.log_text():
            report.failures.append(f"tracebacks logged: {hook.log_text().count('Traceback')}")
    return report
