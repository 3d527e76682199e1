"""The status controller in a crowded cluster (`python -m bench.crowded`, in `make bench-cluster`;
needs `make cluster`): the test cluster's kube-apiserver and etcd on loopback hold N Direct vLLM
ModelDeployments (admitted in this process, as bench/status_loop.py does) and their Deployments
across a few namespaces, beside N Secrets, N ConfigMaps and N/10 Deployments no one labelled
Runway's (each a few hundred bytes, created concurrently, bounded). The controller then runs as
its own process (`runway status-controller`, as a user runs it), so its memory is its own.

Measured against issue #46's targets:
- the first status on every model, from the controller's start (target 60 s);
- a Deployment status write (it turns ready) to a watch seeing its ModelDeployment Running,
  one change at a time, p50 and p99 (target p99 100 ms);
- the controller's peak RSS (VmHWM of /proc/PID/status; target 300 MB);
- unrelated objects cached: the controller's own runway_status_cached_objects against what it
  owns (target 0).
Every ~0.5 s the bench samples the controller's RSS and its /metrics (watch events per kind,
queue depth), and writes them to a CSV and a plot (bench/plot.py): RSS, event rate and queue
depth over time, one panel each. No webhook and no Deployment controller run: the bench writes
the Deployment status as the controller-manager would."""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import datetime as dt
import itertools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

import kubernetes

from bench.plot import Panel, Series, render
from bench.procfs import cpu_seconds, rss_of
from bench.status_loop import deployment, model, owned, ready  # the loop bench's objects and write
from kubeio.registry import build_registry
from tests.support.cluster import Cluster, free_port, missing_binaries, start_cluster
from tests.support.wait import wait_until

GROUP, VERSION, PLURAL = "airunway.ai", "v1alpha1", "modeldeployments"
SAMPLE_SECONDS = 0.5
FIRST_TARGET, P99_TARGET, RSS_TARGET = 60.0, 100.0, 300.0  # s, ms, MB
HERE = Path(__file__).resolve().parent
KINDS_PLOTTED = ("ModelDeployment", "Deployment")
_SERIES = re.compile(r'^([a-z_]+)(?:\{kind="([A-Za-z]+)"\})? (-?[0-9.e+]+)$')


def parse_metrics(text: str) -> dict[tuple[str, str], float]:
    """(metric, kind or "") -> value of the controller's /metrics lines this bench reads;
    comments and lines of any other shape are left out."""
    out = {}
    for line in text.splitlines():
        found = _SERIES.match(line.strip())
        if found:
            with contextlib.suppress(ValueError):
                out[(found.group(1), found.group(2) or "")] = float(found.group(3))
    return out


@dataclass(frozen=True, slots=True)
class Sample:
    seconds: float  # since the controller started
    rss_mb: float
    queue: float
    events: tuple[tuple[str, float], ...]  # (kind, watch events so far)


def rates(samples: Sequence[Sample], kind: str) -> tuple[tuple[float, float], ...]:
    """(seconds, events/s of `kind` since the sample before)."""
    out = []
    for before, after in itertools.pairwise(samples):
        span = after.seconds - before.seconds
        if span > 0:
            delta = dict(after.events).get(kind, 0.0) - dict(before.events).get(kind, 0.0)
            out.append((after.seconds, delta / span))
    return tuple(out)


def csv_of(samples: Sequence[Sample]) -> str:
    kinds = sorted({k for s in samples for k, _ in s.events})
    lines = [",".join(["seconds", "rss_mb", "queue_depth", *(f"events_{k}" for k in kinds)])]
    for s in samples:
        events = dict(s.events)
        lines.append(
            ",".join(
                [f"{s.seconds:.2f}", f"{s.rss_mb:.1f}", f"{s.queue:.0f}"]
                + [f"{events.get(k, 0.0):.0f}" for k in kinds]
            )
        )
    return "\n".join(lines) + "\n"


def plot_of(samples: Sequence[Sample], title: str) -> str:
    return render(
        title,
        "seconds since the controller started",
        [
            Panel(
                "controller resident memory",
                "RSS (MB)",
                (Series("VmRSS", tuple((s.seconds, s.rss_mb) for s in samples)),),
                target=RSS_TARGET,
            ),
            Panel(
                "watch events reaching the cache (listed objects included)",
                "events / s",
                tuple(Series(k, rates(samples, k)) for k in KINDS_PLOTTED),
            ),
            Panel(
                "work queue",
                "keys queued",
                (Series("depth", tuple((s.seconds, s.queue) for s in samples)),),
            ),
        ],
    )


def _secret(name: str, namespace: str) -> dict[str, Any]:
    value = base64.b64encode(name.encode().ljust(240, b"s")).decode()
    meta = {"name": name, "namespace": namespace, "labels": {"app": "unrelated"}}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": value}}


def _config_map(name: str, namespace: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "labels": {"app": "unrelated"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"c": "x" * 300}}


class Phases:
    """A watch of every ModelDeployment recording when each is first seen in each phase."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self._objects = kubernetes.client.CustomObjectsApi(api)
        self.seen: dict[tuple[str, str, str], float] = {}
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                # The kubernetes client is untyped (pyproject.toml's list; this bench is not in it).
                watcher = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
                for event in watcher.stream(  # type: ignore[no-untyped-call]
                    self._objects.list_cluster_custom_object,
                    GROUP,
                    VERSION,
                    PLURAL,
                    timeout_seconds=60,
                ):
                    self._note(event["object"])
                    if stop.is_set():
                        return
            except Exception:  # the API server stops after the bench: the watch ends with it
                if not stop.is_set():
                    raise

    def _note(self, obj: Mapping[str, Any]) -> None:
        phase = (obj.get("status") or {}).get("phase")
        if not phase:
            return
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"], phase)
        with self.lock:
            if key not in self.seen:
                self.seen[key] = time.perf_counter()
                self.counts[phase] = self.counts.get(phase, 0) + 1

    def count(self, phase: str) -> int:
        with self.lock:
            return self.counts.get(phase, 0)

    def at(self, namespace: str, name: str, phase: str) -> float | None:
        with self.lock:
            return self.seen.get((namespace, name, phase))


def _client(cluster: Cluster, pool: int) -> kubernetes.client.ApiClient:
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
        str(cluster.kubeconfig), client_configuration=config
    )
    config.connection_pool_maxsize = pool
    return kubernetes.client.ApiClient(config)


def _create_all(work: Iterator[Callable[[], Any]], workers: int) -> int:
    """Run every call of `work` on `workers` threads, at most 4 times `workers` queued at once."""
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        pending: set[concurrent.futures.Future[Any]] = set()
        for call in work:
            pending.add(pool.submit(call))
            if len(pending) >= 4 * workers:
                finished, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in finished:
                    future.result()
                    done += 1
        for future in concurrent.futures.as_completed(pending):
            future.result()
            done += 1
    return done


def _populate(
    api: kubernetes.client.ApiClient, args: argparse.Namespace, spaces: list[str]
) -> list[tuple[str, str]]:
    """Create the models, their Deployments and the crowd; the (namespace, name) of each model."""
    objects = kubernetes.client.CustomObjectsApi(api)
    core = kubernetes.client.CoreV1Api(api)
    registry = build_registry()
    models = [(spaces[i % len(spaces)], f"m{i}") for i in range(args.models)]

    def custom(group: str, version: str, plural: str, obj: dict[str, Any]) -> Any:
        namespace = obj["metadata"]["namespace"]
        return objects.create_namespaced_custom_object(group, version, namespace, plural, obj)

    def unread(create: Callable[..., Any], obj: dict[str, Any]) -> None:
        # the answer's body is not decoded into the client's models: only its status matters
        create(obj["metadata"]["namespace"], obj, _preload_content=False).release_conn()

    def calls() -> Iterator[Callable[[], Any]]:
        for namespace, name in models:
            labels = owned(name)
            yield partial(custom, GROUP, VERSION, PLURAL, model(name, namespace, registry))
            yield partial(custom, "apps", "v1", "deployments", deployment(name, namespace, labels))
        for i in range(args.unrelated):
            namespace = spaces[i % len(spaces)]
            yield partial(unread, core.create_namespaced_secret, _secret(f"s{i}", namespace))
            yield partial(
                unread, core.create_namespaced_config_map, _config_map(f"c{i}", namespace)
            )
        helm = {"app.kubernetes.io/managed-by": "Helm"}
        for i in range(args.models // 10):
            other = deployment(f"other{i}", spaces[i % len(spaces)], helm)
            yield partial(custom, "apps", "v1", "deployments", other)

    started = time.perf_counter()
    count = _create_all(calls(), args.workers)
    took = time.perf_counter() - started
    print(f"created {count:,} objects in {took:.1f} s ({count / took:.0f}/s); load {_load()}")
    return models


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Sampler:
    """RSS and /metrics of the controller process every SAMPLE_SECONDS."""

    def __init__(self, pid: int, metrics_url: str, started: float) -> None:
        self._pid, self._url, self._started = pid, metrics_url, started
        self.samples: list[Sample] = []
        self.last: dict[tuple[str, str], float] = {}

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(SAMPLE_SECONDS):
            self.take()

    def take(self) -> None:
        try:
            rss, _ = rss_of(Path(f"/proc/{self._pid}/status").read_text())
        except (OSError, ValueError):
            return  # the process ended
        try:
            with urllib.request.urlopen(self._url, timeout=5) as answer:
                self.last = parse_metrics(answer.read().decode())
        except OSError:
            pass  # not serving yet: the RSS still counts
        events = tuple(
            sorted(
                (k, v) for (m, k), v in self.last.items() if m == "runway_status_watch_events_total"
            )
        )
        queue = self.last.get(("runway_status_queue_depth", ""), 0.0)
        self.samples.append(Sample(time.perf_counter() - self._started, rss, queue, events))


def _controller(
    cluster: Cluster, namespace: str, port: int, log: IO[bytes]
) -> subprocess.Popen[bytes]:
    runway = shutil.which("runway") or str(Path(sys.executable).parent / "runway")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    return subprocess.Popen(
        [
            runway,
            "status-controller",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--lease-namespace",
            namespace,
            "--identity",
            "crowded-bench",
            "--probe-port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crowded")
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument(
        "--unrelated",
        type=int,
        default=None,
        help="Secrets and ConfigMaps each (default: --models)",
    )
    parser.add_argument("--namespaces", type=int, default=4)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--svg", type=Path, default=HERE / "crowded.svg")
    parser.add_argument("--csv", type=Path, default=HERE / "crowded.csv")
    args = parser.parse_args()
    if args.unrelated is None:
        args.unrelated = args.models
    missing = missing_binaries()
    if missing:
        raise SystemExit(f"bench.crowded: {', '.join(missing)} not built; run `make cluster`")
    with tempfile.TemporaryDirectory() as scratch:
        cluster = start_cluster(Path(scratch))
        try:
            _run(cluster, args)
        finally:
            cluster.stop()


def _run(cluster: Cluster, args: argparse.Namespace) -> None:
    print(f"load before: {_load()}")
    spaces = [f"crowded-{i}" for i in range(args.namespaces)]
    for namespace in spaces:
        cluster.kubectl("create", "namespace", namespace)
    api = _client(cluster, args.workers)
    models = _populate(api, args, spaces)
    stop = threading.Event()
    phases = Phases(api)
    threading.Thread(target=phases.run, args=(stop,), daemon=True).start()
    port = free_port()
    servers = {n: cluster.processes[cluster.names.index(n)].pid for n in ("kube-apiserver", "etcd")}
    before = {n: cpu_seconds(pid) for n, pid in servers.items()}
    started = time.perf_counter()
    log = (cluster.workdir / "controller.log").open("wb")
    process = _controller(cluster, spaces[0], port, log)
    sampler = Sampler(process.pid, f"http://127.0.0.1:{port}/metrics", started)
    sampling = threading.Thread(target=sampler.run, args=(stop,), daemon=True)
    sampling.start()
    apps = kubernetes.client.AppsV1Api(api)
    samples: list[float] = []
    try:
        wait_until(
            lambda: phases.count("Deploying") == len(models),
            timeout=600,
            interval=0.05,
            what="every first status",
        )
        first = time.perf_counter() - started
        first_cpu = {"controller": cpu_seconds(process.pid)} | {
            n: cpu_seconds(pid) - before[n] for n, pid in servers.items()
        }
        step = max(len(models) // args.changes, 1)
        for namespace, name in models[::step][: args.changes]:
            meta = apps.read_namespaced_deployment(name, namespace).metadata
            generation = int(meta.generation) if meta is not None and meta.generation else 1
            sent = time.perf_counter()
            apps.patch_namespaced_deployment_status(name, namespace, ready(generation))
            wait_until(
                partial(phases.at, namespace, name, "Running"),
                timeout=60,
                interval=0.001,
                what=f"{namespace}/{name} Running",
            )
            done = phases.at(namespace, name, "Running")
            assert done is not None
            samples.append((done - sent) * 1e3)
        time.sleep(2 * SAMPLE_SECONDS)
        sampler.take()
        _, peak = rss_of(Path(f"/proc/{process.pid}/status").read_text())
    finally:
        stop.set()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        api.close()  # type: ignore[no-untyped-call]
    _report(args, sampler, Measured(first, first_cpu, samples, peak, len(models)))


@dataclass(frozen=True, slots=True)
class Measured:
    first: float  # seconds to the first status on every model
    first_cpu: dict[str, float]  # CPU seconds of the controller, kube-apiserver, etcd by then
    latencies: list[float]  # ms, one per upstream change
    peak: float  # the controller's VmHWM, MB
    models: int


def _report(args: argparse.Namespace, sampler: Sampler, measured: Measured) -> None:
    first, peak, models = measured.first, measured.peak, measured.models
    cores = os.cpu_count() or 1
    spent = sum(measured.first_cpu.values())
    floor = max(spent / cores, 1e-9)  # the first pass's wall time on idle cores, at best
    share = measured.first_cpu["controller"] / max(spent, 1e-9)
    latencies = sorted(measured.latencies)
    p50 = statistics.median(latencies)
    p99 = latencies[max(int(len(latencies) * 0.99) - 1, 0)]
    cached = {k: v for (m, k), v in sampler.last.items() if m == "runway_status_cached_objects"}
    owned = {"ModelDeployment": models, "Deployment": models}
    unrelated = sum(
        v - owned.get(k, 0) for k, v in cached.items() if k != "InferenceProviderConfig"
    )

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    rows = [
        (
            "first status on every model",
            f"{first:.1f} s (CPU s: "
            + ", ".join(f"{n} {v:.1f}" for n, v in measured.first_cpu.items())
            + f"; their sum over {cores} cores, the floor: {floor:.1f} s; wall / floor "
            f"{first / floor:.2f}; the controller's share {share:.0%})",
            f"<= {FIRST_TARGET:.0f} s",
            first <= FIRST_TARGET,
        ),
        (
            f"upstream change reflected, {len(latencies)} one at a time",
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms",
            f"p99 <= {P99_TARGET:.0f} ms",
            p99 <= P99_TARGET,
        ),
        (
            "controller peak RSS (VmHWM)",
            f"{peak:.0f} MB",
            f"<= {RSS_TARGET:.0f} MB",
            peak <= RSS_TARGET,
        ),
        (
            "unrelated objects cached",
            f"{unrelated:.0f} (held: "
            + ", ".join(f"{k} {v:.0f}" for k, v in sorted(cached.items()) if v)
            + ")",
            "0",
            unrelated == 0,
        ),
    ]
    print(
        f"\nstatus controller in a crowded cluster: {models:,} ModelDeployments and their "
        f"Deployments in {args.namespaces} namespaces, beside {args.unrelated:,} Secrets, "
        f"{args.unrelated:,} ConfigMaps and {models // 10:,} unlabelled Deployments; "
        f"load {_load()}"
    )
    for name, value, target, ok in rows:
        print(f"| {name} | {value} | {target} | {verdict(ok)} |")
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    title = (
        f"runway status-controller, {models:,} models beside {2 * args.unrelated:,} Secrets and "
        f"ConfigMaps ({today})"
    )
    args.csv.write_text(csv_of(sampler.samples))
    args.svg.write_text(plot_of(sampler.samples, title))
    print(f"samples: {len(sampler.samples)} -> {args.csv}, {args.svg}")


if __name__ == "__main__":
    main()
