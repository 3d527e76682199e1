"""Time from sync to Ready: one gateway-sync pass (in process) that registers N provider models in
the real LiteLLM proxy (tests/support/litellm_server.py; only the persistence of
/model/new|update|delete is substituted) and confirms each in /model/info and /v1/models; then a
pass with nothing to change (the re-send of every key a fresh process does once), and one that
deletes them all."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from core.model.destinations import Destinations
from gateway.apikeys import FileSecrets
from gateway.litellm import LiteLLM
from gateway.merge import plan
from gateway.sync import Syncer
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from tests.support.answers import FakeUpstream
from tests.support.builders import external_model_provider
from tests.support.litellm import MASTER_KEY, start_proxy

SIZES = (1, 10, 50)
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "provider-key", "namespace": "gw"},
    "stringData": {"apiKey": "sk-bench-key"},
}


# The stand-in upstream listens on loopback, which base URLs may not name unless allowed.
LOOPBACK = Destinations.parse(["127.0.0.1"])


def main() -> None:
    registry = build_registry(bundled_config_objects(), flags={})
    pins = bundled_versions()
    upstream = FakeUpstream("bench").start()
    with tempfile.TemporaryDirectory() as work:
        proxy = start_proxy(
            Path(work),
            [
                {
                    "model_name": "config-model",
                    "litellm_params": {"model": "openai/c", "api_base": upstream.url},
                    "model_info": {"id": "config-1"},
                }
            ],
        )
        try:
            syncer = Syncer(LiteLLM(proxy.url, MASTER_KEY), FileSecrets([SECRET]))
            for size in SIZES:
                providers = [
                    external_model_provider(
                        f"p{i}", "gw", baseURL=upstream.url, models=[{"servedName": f"m{i}"}]
                    )
                    for i in range(size)
                ]
                desired = plan([], providers, registry=registry, pins=pins, destinations=LOOPBACK)
                empty = plan([], [], registry=registry, pins=pins)
                timings = []
                for label, target in (
                    ("register", desired),
                    ("unchanged", desired),
                    ("delete", empty),
                ):
                    start = time.perf_counter()
                    results = syncer.reconcile(target)
                    elapsed = time.perf_counter() - start
                    ready = sum(r.registered for r in results)
                    timings.append(f"{label} {elapsed * 1000:.0f} ms ({ready} Ready)")
                print(f"gateway-sync {size:>3} models: " + "; ".join(timings))
            start = time.perf_counter()
            samples = []
            for _ in range(20):
                t0 = time.perf_counter()
                proxy.models()
                samples.append(time.perf_counter() - t0)
            print(f"LiteLLM GET /v1/models median {statistics.median(samples) * 1000:.1f} ms")
        finally:
            proxy.stop()
            upstream.stop()


if __name__ == "__main__":
    main()
