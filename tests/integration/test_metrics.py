"""/metrics of a real `runway serve` (gunicorn, two workers, TLS): the whole server's counts, from
whichever worker answers, and they never go back, not even when a worker is killed; and /readyz
is ready only when every live worker is."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

from tests.support.builders import model_deployment
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook
from webhook.metrics import Metrics

REQUESTS = 40
SCRAPES = 20
WORKERS = 2
METRICS_DIR = re.compile(r"metrics directory created path=(\S+)")
COUNTER_FILE = re.compile(r"^counter_(\d+)\.db$")
GAUGE_FILE = re.compile(r"^gauge_\w+?_(\d+)\.db$")


def scrape(hook: Webhook) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample of the Runway families, by sample name and labels."""
    status, body = hook.request("GET", "/metrics")
    assert status == 200
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name.startswith("runway_") and not sample.name.endswith("_bucket"):
                labels = tuple(sorted(sample.labels.items()))
                samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def counted(samples: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> tuple[object, ...]:
    """What the requests changed: answers by labels, the latency count, the ready gauge."""
    return (
        samples["runway_admission_requests_total"],
        samples["runway_admission_duration_seconds_count"],
        samples["runway_webhook_ready"],
    )


def metrics_dir(hook: Webhook) -> str:
    """The server's metrics directory, from its log ("" before it is logged)."""
    found = METRICS_DIR.search(hook.log_text())
    return found.group(1) if found else ""


def counter_pids(directory: Path) -> set[int]:
    return {int(m.group(1)) for p in directory.iterdir() if (m := COUNTER_FILE.match(p.name))}


def gauge_pids(directory: Path) -> set[int]:
    return {int(m.group(1)) for p in directory.iterdir() if (m := GAUGE_FILE.match(p.name))}


def test_metrics_add_up_over_workers_and_survive_a_killed_worker(tmp_path: Path) -> None:
    hook = start_webhook(tmp_path, workers=WORKERS)
    try:
        directory = Path(wait_until(lambda: metrics_dir(hook), what="the metrics directory"))
        for i in range(REQUESTS):  # a new connection each: the kernel spreads them over workers
            hook.admit("/validate", review(model_deployment(gpu=1), uid=f"m-{i}"))
        before = [counted(scrape(hook)) for _ in range(SCRAPES)]
        workers_counting = counter_pids(directory)

        victim = min(workers_counting)
        os.kill(victim, signal.SIGKILL)
        wait_until(
            lambda: hook.log_text().count("Booting worker with pid") == WORKERS + 1,
            timeout=30,
            what="the killed worker to be replaced",
        )
        # The new worker reports itself (not yet ready) when it builds its app, after it logs
        # "Booting", and ready once it has read the provider configs: until then the server is
        # rightly not ready. Once the new worker has reported and /readyz says every worker is
        # ready, every scrape must be whole.
        wait_until(
            lambda: (
                (gauge_pids(directory) - {victim} - workers_counting)
                and hook.request("GET", "/readyz")[0] == 200
            ),
            timeout=30,
            what="the replaced worker to be ready",
        )
        after = [counted(scrape(hook)) for _ in range(SCRAPES)]
        cert_expiry = scrape(hook)["runway_serving_certificate_expiry_timestamp_seconds"]
    finally:
        assert hook.stop() == 0, hook.log_text()[-3000:]

    expected = (
        {(("allowed", "true"), ("kind", "ModelDeployment"), ("operation", "CREATE")): REQUESTS},
        {(): REQUESTS},
        {(): 1.0},
    )
    assert len(workers_counting) == WORKERS  # both workers answered some of the requests
    assert before == [expected] * SCRAPES
    assert after == [expected] * SCRAPES  # the killed worker's counts stay in the totals
    assert list(cert_expiry) == [()]
    assert not directory.exists()  # removed when the server stopped


def report(directory: Path, ready: bool) -> int:
    """One worker process of a server: it reports its readiness into the server's directory,
    as a gunicorn worker does, and exits; its pid."""
    code = (
        "import os, sys\n"
        "from webhook.metrics import Metrics\n"
        f"Metrics(multiprocess_dir={str(directory)!r}).source_ready({ready!r})\n"
        "print(os.getpid())\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout)


@pytest.mark.parametrize(
    "workers",
    [(True,), (False,), (True, True), (True, False), (False, True), (True, True, False)],
)
def test_the_server_is_ready_only_when_every_live_worker_is(
    tmp_path: Path, workers: tuple[bool, ...]
) -> None:
    pids = [report(tmp_path, ready) for ready in workers]
    server = Metrics(multiprocess_dir=str(tmp_path))

    assert server.every_worker_ready() is all(workers)
    for pid, ready in zip(pids, workers, strict=True):
        if not ready:  # gunicorn marks an exited worker dead (webhook/multiprocess.py)
            multiprocess.mark_process_dead(pid, str(tmp_path))
    assert server.every_worker_ready() is any(workers)
    assert Metrics().every_worker_ready() is True
