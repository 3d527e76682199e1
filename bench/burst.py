"""300 ModelDeployments created at once through kube-apiserver, with Runway's webhook in the path
and without it (issue #46, the burst row; `python -m bench.burst`, in `make bench-cluster`).

The test cluster's kube-apiserver and etcd (tests/support/cluster.py) with Runway's CRDs and the
shipped InferenceProviderConfigs (`kustomize/providers`, as the e2e tier applies them); the
webhook as `runway serve` (gunicorn over TLS, 2 workers, the provider configs watched through the
API server as `--in-cluster` does), registered by kustomize/base's webhook configurations as
shipped (failurePolicy Fail, timeoutSeconds 5), pointed at 127.0.0.1 by URL, their CA set by
`certs.inject`. The creates come from a ServiceAccount with a Role (API Priority and Fairness
puts it in `workload-low`, as an operator or a GitOps tool; system:masters would be exempt).

A round: COUNT connections opened (TLS done), then released at once, each sending one POST of
one ModelDeployment (six shapes: vLLM, llm-d, KubeRay by selection, Dynamo, KAITO twice); each
create's latency is from its send to its whole answer. Rounds alternate "webhook" (the
configurations registered, raw objects) and "none" (the configurations deleted, the objects
admitted in this process with `core.admission.pipeline.admit`, so the same objects are stored),
each in a fresh namespace, ROUNDS of each, the order swapped every round. kube-apiserver's
/metrics (read strictly, tests/support/promtext.py) and the webhook's are scraped before and
after each round; also recorded: the CPU seconds of kube-apiserver, etcd, the webhook and this
client over each burst, and the TCP connections the API server held to the webhook (sampled
from /proc/net/tcp: each new one is a TLS handshake).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import ssl
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import yaml

from bench.procfs import cpu_seconds
from bench.webhook import _workers as workers_of
from certs.inject import inject_ca_bundle
from cli.manifests import crds_yaml
from core.admission.pipeline import admit
from core.selection.configs import ProviderRegistry
from kubeio.yamlio import dump_all
from tests.support.builders import shipped_registry
from tests.support.burst import (
    Outcome,
    burst_models,
    classify,
    connections_to,
    nearest_rank,
    shipped_webhooks,
    status_message,
)
from tests.support.burst_metrics import (
    Latency,
    RoundMetrics,
    latency_line,
    round_metrics,
    webhook_latency,
)
from tests.support.cluster import Cluster, missing_binaries, start_cluster
from tests.support.paths import ROOT
from tests.support.promtext import Scrape, parse
from tests.support.users import User, grant, make_user
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, start_webhook

COUNT, ROUNDS = 300, 3
CLIENT_TIMEOUT = 60  # seconds a create may take on the client's side before it counts as unanswered
TARGET_RATIO = 2.0  # p99 with the webhook at most twice the p99 without (issue #46)
GROUP, VERSION, PLURAL = "airunway.ai", "v1alpha1", "modeldeployments"
CONFIG = "runway"  # the shipped configurations' name
SAMPLE_SECONDS = 0.05
FAILED = (Outcome.WEBHOOK_TIMEOUT, Outcome.WEBHOOK_ERROR)


@dataclass(frozen=True, slots=True)
class Create:
    outcome: Outcome
    ms: float
    message: str  # the Status message when not created


@dataclass(frozen=True, slots=True)
class Round:
    mode: str  # "webhook" or "none"
    number: int
    creates: tuple[Create, ...]
    wall_s: float  # release to the last answer
    metrics: RoundMetrics
    load: str
    cpu: dict[str, float]  # CPU seconds each process used over the round
    webhook_side: Latency | None  # the webhook's own histogram over the round
    connections: tuple[int, int]  # to the webhook: distinct ones seen, most open at once

    def latencies(self) -> list[float]:
        return [c.ms for c in self.creates]


def fire(
    cluster: Cluster, token: str, namespace: str, models: Sequence[dict[str, Any]]
) -> tuple[list[Create], float]:
    """Open one TLS connection per object, then send every create at once; the answers and the
    wall time from the release to the last answer."""
    host, port = cluster.server.removeprefix("https://").split(":")
    context = ssl.create_default_context(cafile=str(cluster.pki / "ca.pem"))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    gate = threading.Barrier(len(models) + 1, timeout=120)
    results: list[Create | None] = [None] * len(models)

    def one(i: int, body: bytes) -> None:
        conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=CLIENT_TIMEOUT)
        try:
            conn.connect()
            gate.wait()
            sent = time.perf_counter()
            try:
                conn.request("POST", path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException) as err:
                ms = (time.perf_counter() - sent) * 1e3
                results[i] = Create(Outcome.NO_ANSWER, ms, f"{type(err).__name__}: {err}")
                return
            ms = (time.perf_counter() - sent) * 1e3
            outcome = classify(answer.status, data)
            message = "" if outcome is Outcome.CREATED else status_message(data)
            results[i] = Create(outcome, ms, message)
        finally:
            conn.close()

    bodies = [json.dumps(m).encode() for m in models]
    threads = [threading.Thread(target=one, args=(i, b), daemon=True) for i, b in enumerate(bodies)]
    for thread in threads:
        thread.start()
    gate.wait()
    released = time.perf_counter()
    for thread in threads:
        thread.join(timeout=CLIENT_TIMEOUT + 30)
    wall = time.perf_counter() - released
    done = [r for r in results if r is not None]
    if len(done) != len(models):
        raise RuntimeError(f"{len(models) - len(done)} creates never finished")
    return done, wall


def scrape(cluster: Cluster) -> Scrape:
    context = ssl.create_default_context(cafile=str(cluster.pki / "ca.pem"))
    context.load_cert_chain(str(cluster.pki / "admin-cert.pem"), str(cluster.pki / "admin-key.pem"))
    with urllib.request.urlopen(f"{cluster.server}/metrics", timeout=30, context=context) as got:
        return parse(got.read().decode())


class Sampler:
    """Samples the TCP connections to the webhook's port every SAMPLE_SECONDS while a round runs:
    how many distinct ones the API server opened (a lower bound: one opened and closed between
    two samples is missed) and how many were open at once."""

    def __init__(self, port: int) -> None:
        self.port, self.seen, self.most = port, set[tuple[str, str]](), 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            now = connections_to(Path("/proc/net/tcp").read_text(), self.port)
            self.seen |= now
            self.most = max(self.most, len(now))

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def webhook_scrape(hook: Webhook) -> Scrape:
    status, body = hook.request("GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"the webhook's /metrics answered {status}")
    return parse(body.decode())


class Plane:
    """The cluster, the webhook and the bench's user: switches the webhook in and out."""

    def __init__(self, cluster: Cluster, hook: Webhook, user: User) -> None:
        self.cluster, self.hook, self.user = cluster, hook, user
        self.api = cluster.api_client()
        self.objects = kubernetes.client.CustomObjectsApi(self.api)
        self.registry: ProviderRegistry = shipped_registry()
        self.configs = shipped_webhooks(hook.url)
        self.probe = burst_models("burst-probe", 1)[0]
        cluster.kubectl("create", "namespace", "burst-probe")

    def register(self, on: bool) -> None:
        """Apply (and inject the CA into) or delete the shipped configurations; return once a
        dry-run create shows the API server calling the webhook, or no longer calling it."""
        if on:
            self.cluster.apply_manifests(dump_all(self.configs))
            ca = (self.hook.certs / "ca.crt").read_bytes()
            inject_ca_bundle(self.api, ca, mutating=[CONFIG], validating=[CONFIG])
        else:
            self.cluster.kubectl(
                "delete",
                f"mutatingwebhookconfiguration/{CONFIG}",
                f"validatingwebhookconfiguration/{CONFIG}",
                "--ignore-not-found",
            )
        admitted = admit(self.probe, registry=self.registry).obj["spec"]
        wait_until(
            lambda: (self._dry_run()["spec"] == admitted) == on,
            timeout=60,
            interval=0.2,
            what=f"the API server {'calling' if on else 'no longer calling'} the webhook",
        )

    def _dry_run(self) -> dict[str, Any]:
        answer = self.objects.create_namespaced_custom_object(
            GROUP, VERSION, "burst-probe", PLURAL, self.probe, dry_run="All"
        )
        assert isinstance(answer, dict)
        return answer

    def round(self, mode: str, number: int, count: int) -> tuple[Round, dict[str, Any]]:
        """One burst in a fresh namespace; the round and what the API server stored."""
        namespace = f"burst-{number}-{mode}"
        self.cluster.kubectl("create", "namespace", namespace)
        grant(
            self.cluster,
            self.user,
            namespace,
            verbs=["create"],
            resources=[PLURAL],
            group=GROUP,
            role="burst",
        )
        models = burst_models(namespace, count)
        if mode == "none":
            models = [admit(m, registry=self.registry).obj for m in models]
        load = Path("/proc/loadavg").read_text().split()[:3]
        before, hook_before = scrape(self.cluster), webhook_scrape(self.hook)
        cpu_before = self.cpu()
        with Sampler(self.hook.port) as sampler:
            creates, wall = fire(self.cluster, self.user.token, namespace, models)
        cpu_after = self.cpu()
        after, hook_after = scrape(self.cluster), webhook_scrape(self.hook)
        stored = self.objects.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        assert isinstance(stored, dict)
        self.objects.delete_collection_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        self.cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        metrics = round_metrics(before, after, resource=PLURAL)
        done = Round(
            mode,
            number,
            tuple(creates),
            wall,
            metrics,
            " ".join(load),
            {name: cpu_after[name] - cpu_before[name] for name in cpu_before},
            webhook_latency(hook_before, hook_after),
            (len(sampler.seen), sampler.most),
        )
        return done, {i["metadata"]["name"]: _comparable(i) for i in stored["items"]}

    def cpu(self) -> dict[str, float]:
        """CPU seconds used so far by kube-apiserver, etcd, the webhook (server and workers) and
        this process (the client)."""
        procs = dict(zip(self.cluster.names, self.cluster.processes, strict=True))
        hook = self.hook.proc.pid
        mine = os.times()
        return {
            "kube-apiserver": cpu_seconds(procs["kube-apiserver"].pid),
            "etcd": cpu_seconds(procs["etcd"].pid),
            "webhook": sum(cpu_seconds(p) for p in (hook, *workers_of(hook))),
            "client": mine.user + mine.system,
        }

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]  # the client ships no type hints


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "spec": obj["spec"],
        "labels": meta.get("labels", {}),
        "annotations": meta.get("annotations", {}),
    }


def install_runway_crds(cluster: Cluster) -> None:
    """Runway's own CRDs only: the burst stores nothing else (start_cluster's full set adds the
    schema pack's and the GitOps tools' CRDs, which only make the API server slower to start)."""
    text = crds_yaml()
    cluster.apply_manifests(text)
    cluster.wait_established([d["metadata"]["name"] for d in yaml.safe_load_all(text) if d])


def run(cluster: Cluster, workdir: Path, count: int, rounds: int) -> list[Round]:
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=runway-tests",
        "-k",
        str(ROOT / "kustomize" / "providers"),
    )
    (workdir / "webhook").mkdir()
    hook = start_webhook(
        workdir / "webhook", args=["--kubeconfig", str(cluster.kubeconfig)], workers=2
    )
    try:
        cluster.kubectl("create", "namespace", "burst-users")
        plane = Plane(cluster, hook, make_user(cluster, "burst-users", "burst"))
        done: list[Round] = []
        stored: dict[str, list[dict[str, Any]]] = {"webhook": [], "none": []}
        try:
            for number in range(rounds):
                order = ("webhook", "none") if number % 2 == 0 else ("none", "webhook")
                for mode in order:
                    plane.register(mode == "webhook")
                    result, objects = plane.round(mode, number, count)
                    done.append(result)
                    stored[mode].append(objects)
                    print(_row(result), flush=True)
        finally:
            plane.close()
        same = all(a == b for a, b in zip(stored["webhook"], stored["none"], strict=True))
        print(f"stored objects alike with and without the webhook: {'yes' if same else 'NO'}")
    finally:
        hook.stop()
        print(_webhook_log_summary(hook))
    return done


def _webhook_log_summary(hook: Webhook) -> str:
    lines = hook.log_text().splitlines()
    errors = [line for line in lines if " ERROR " in line or "Traceback" in line]
    timeouts = [line for line in lines if "WORKER TIMEOUT" in line or "timed out" in line]
    return f"webhook log: {len(lines)} lines, {len(errors)} errors, {len(timeouts)} timeouts"


HEADER = (
    "| mode | round | created | webhook timeouts | webhook errors | denied | 429 | 5xx | other "
    "| no answer | p50 ms | p99 ms | max ms | wall s | load avg |\n" + "|---" * 15 + "|"
)


def _row(r: Round) -> str:
    counts = Counter(c.outcome for c in r.creates)
    ms = r.latencies()
    cells = [
        r.mode,
        str(r.number),
        *(str(counts[o]) for o in Outcome),
        f"{nearest_rank(ms, 0.5):.0f}",
        f"{nearest_rank(ms, 0.99):.0f}",
        f"{max(ms):.0f}",
        f"{r.wall_s:.2f}",
        r.load,
    ]
    lines = ["| " + " | ".join(cells) + " |", *(f"    {line}" for line in r.metrics.lines())]
    if r.webhook_side is not None:
        lines.append(f"    {latency_line(r.webhook_side)}")
    used = ", ".join(f"{name} {seconds:.2f}" for name, seconds in r.cpu.items())
    lines.append(f"    CPU s over the burst: {used}; total {sum(r.cpu.values()):.2f}")
    if r.mode == "webhook":
        seen, most = r.connections
        lines.append(
            f"    connections to the webhook: {seen} distinct (at least), {most} open at once"
        )
    failures = Counter(c.message for c in r.creates if c.outcome is not Outcome.CREATED)
    lines += [f"    {n}x {message}" for message, n in failures.most_common(5)]
    return "\n".join(lines)


def summary(rounds: Sequence[Round]) -> list[str]:
    """The pooled percentiles of each mode, the ratio and the targets, PASS or MISS."""
    pooled = {
        m: [ms for r in rounds if r.mode == m for ms in r.latencies()] for m in ("webhook", "none")
    }
    failed = sum(1 for r in rounds if r.mode == "webhook" for c in r.creates if c.outcome in FAILED)
    not_created = sum(1 for r in rounds for c in r.creates if c.outcome is not Outcome.CREATED)
    p99 = {m: nearest_rank(v, 0.99) for m, v in pooled.items()}
    ratio = p99["webhook"] / p99["none"]
    per_round = [
        nearest_rank(w.latencies(), 0.99) / nearest_rank(n.latencies(), 0.99)
        for w, n in zip(
            [r for r in rounds if r.mode == "webhook"],
            [r for r in rounds if r.mode == "none"],
            strict=True,
        )
    ]
    lines = ["| row | webhook | none | target | result |", "|---|---|---|---|---|"]
    for name, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        lines.append(
            f"| create latency {name}, {len(pooled['webhook'])} creates each | "
            f"{nearest_rank(pooled['webhook'], q):.0f} ms | {nearest_rank(pooled['none'], q):.0f} ms | | |"
        )
    server = {
        m: sum(s for r in rounds if r.mode == m for n, s in r.cpu.items() if n != "client")
        / max(len(pooled[m]), 1)
        * 1e3
        for m in pooled
    }
    lines.append(
        f"| CPU per create, kube-apiserver + etcd + webhook | {server['webhook']:.2f} ms "
        f"| {server['none']:.2f} ms | | ratio {server['webhook'] / server['none']:.2f} |"
    )
    lines += [
        f"| p99 ratio webhook ÷ none (per round: {', '.join(f'{x:.2f}' for x in per_round)}) "
        f"| {ratio:.2f} | | ≤ {TARGET_RATIO:.0f} | {'PASS' if ratio <= TARGET_RATIO else 'MISS'} |",
        f"| webhook timeouts or errors | {failed} | | 0 | {'PASS' if failed == 0 else 'MISS'} |",
        f"| creates not 201 (any mode) | {not_created} | | 0 | {'PASS' if not_created == 0 else 'MISS'} |",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.burst")
    parser.add_argument("--count", type=int, default=COUNT, help="creates per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of each mode")
    args = parser.parse_args(argv)
    missing = missing_binaries()
    if missing:
        raise SystemExit(f"bench.burst: {', '.join(missing)} not built; run `make cluster`")
    print(
        f"burst: {args.count} concurrent creates, {args.rounds} rounds each way, {os.cpu_count()} cores"
    )
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        cluster = start_cluster(Path(scratch), crds=False)
        try:
            install_runway_crds(cluster)
            rounds = run(cluster, Path(scratch), args.count, args.rounds)
        finally:
            cluster.stop()
    print("\n".join(summary(rounds)))
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
