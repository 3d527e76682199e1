"""Admission latency over TLS on loopback: one valid ModelDeployment, serial and concurrent."""

from __future__ import annotations

import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import yaml

from tests.support.webhook import review, start_webhook

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "vllm-1gpu.yaml"
SERIAL = 500
CONCURRENCY = 8
SECONDS = 5.0


def post(conn: http.client.HTTPSConnection, body: bytes) -> None:
    conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"status {response.status}")


def main() -> None:
    body = json.dumps(review(yaml.safe_load(EXAMPLE.read_text()))).encode()
    with tempfile.TemporaryDirectory() as work:
        hook = start_webhook(Path(work), workers=2)
        try:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", hook.port, context=hook.context(), timeout=10
            )
            for _ in range(20):
                post(conn, body)  # warm up
            samples = []
            for _ in range(SERIAL):
                start = time.perf_counter()
                post(conn, body)
                samples.append((time.perf_counter() - start) * 1000)
            conn.close()
            samples.sort()
            p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99) - 1]
            print(
                f"webhook /mutate, keep-alive, serial ({SERIAL} requests): p50 {p50:.2f} ms, p99 {p99:.2f} ms"
            )
            counts, errors = [0] * CONCURRENCY, [0]
            deadline = time.monotonic() + SECONDS

            def client(i: int) -> None:
                c = http.client.HTTPSConnection(
                    "127.0.0.1", hook.port, context=hook.context(), timeout=10
                )
                while time.monotonic() < deadline:
                    try:
                        post(c, body)
                        counts[i] += 1
                    except (OSError, RuntimeError, http.client.HTTPException):
                        errors[0] += 1
                        c.close()
                        c = http.client.HTTPSConnection(
                            "127.0.0.1", hook.port, context=hook.context(), timeout=10
                        )
                c.close()

            threads = [threading.Thread(target=client, args=(i,)) for i in range(CONCURRENCY)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=SECONDS + 30)
            total = sum(counts)
            print(
                f"webhook /mutate, {CONCURRENCY} keep-alive clients for {SECONDS:.0f} s: {total / SECONDS:.0f} req/s, "
                f"{errors[0]} errors (the Python load generator shares the 2 cores with the server)"
            )
        finally:
            hook.stop()


if __name__ == "__main__":
    main()
