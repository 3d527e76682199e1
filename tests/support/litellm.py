"""Start and talk to the real LiteLLM proxy of tests/support/litellm_server.py (its docstring says
what is substituted) on 127.0.0.1, and run `runway gateway-sync` / `gateway-plan` against it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.model.destinations import Destinations
from gateway.litellm import LiteLLM
from gateway.merge import Plan, plan
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from tests.support.builders import external_model_provider
from tests.support.cluster import free_port, terminate
from tests.support.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
RUNWAY = Path(sys.executable).parent / "runway"
# LiteLLM lives in a virtualenv of its own (`make install`; its pins clash with the product's).
LITELLM_PYTHON = ROOT / ".venv-litellm" / "bin" / "python"
MASTER_KEY = "sk-master-runway-test"  # a throwaway key of a proxy that lives for one test session
START_TIMEOUT = 120  # LiteLLM imports for ~5 s on an idle machine; 2 shared cores are slower
# The stand-in upstreams listen on loopback, which base URLs may not name unless allowed.
LOOPBACK = Destinations.parse(["127.0.0.1"])
# The Secret external_model_provider's models use by default (tests/support/builders.py).
PROVIDER_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "provider-key", "namespace": "gw"},
    "stringData": {"apiKey": "sk-provider-key-for-tests"},
}


@dataclass
class Proxy:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    workdir: Path

    def call(self, route: str, body: Mapping[str, Any] | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + route,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"},
            method="GET" if body is None else "POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def models(self) -> list[str]:
        status, body = self.call("/v1/models")
        assert status == 200, body
        return sorted(m["id"] for m in body["data"])

    def entries(self) -> dict[str, dict[str, Any]]:
        """/model/info by model_info.id."""
        status, body = self.call("/model/info")
        assert status == 200, body
        return {e["model_info"]["id"]: e for e in body["data"]}

    def chat(self, model: str) -> tuple[int, Any]:
        return self.call(
            "/v1/chat/completions",
            {"model": model, "messages": [{"role": "user", "content": "hi"}]},
        )

    def stop(self) -> int:
        return terminate(self.process)


@dataclass
class CountingLiteLLM(LiteLLM):
    """The sync's own LiteLLM client, counting the requests it sends by kind ("GET /model/info",
    "GET /model/info?litellm_model_id", "POST /model/new", ...); every request still goes to
    LiteLLM as the client sends it."""

    counts: Counter[str] = field(default_factory=Counter, repr=False, compare=False)
    _count_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _exchange(
        self, route: str, body: Mapping[str, Any] | None, limit: int
    ) -> tuple[int, bytes]:
        path = urllib.parse.urlsplit(route)
        query = "?" + "&".join(sorted(urllib.parse.parse_qs(path.query))) if path.query else ""
        with self._count_lock:
            self.counts[f"{'GET' if body is None else 'POST'} {path.path}{query}"] += 1
        return super()._exchange(route, body, limit)

    def take(self) -> dict[str, int]:
        """The counts since the last take, and start again."""
        with self._count_lock:
            taken = dict(sorted(self.counts.items()))
            self.counts.clear()
        return taken


def _alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def litellm_python() -> Path | None:
    """The interpreter that has litellm[proxy] installed, or None ($RUNWAY_LITELLM_PYTHON wins)."""
    path = Path(os.environ.get("RUNWAY_LITELLM_PYTHON") or LITELLM_PYTHON)
    return path if path.exists() else None


def require_litellm() -> Path:
    """The LiteLLM interpreter; in CI its absence fails the test, by hand it skips loudly."""
    path = litellm_python()
    if path is None:
        message = (
            f"LiteLLM tier: {LITELLM_PYTHON} missing; run `make test` (it creates .venv-litellm)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        warnings.warn(message, stacklevel=2)
        pytest.skip(message)
    return path


def start_proxy(
    workdir: Path, config_models: Sequence[Mapping[str, Any]], *, wrap: Sequence[str] = ()
) -> Proxy:
    """The proxy with `config_models` in its config.yaml (entries the sync must never touch),
    started under `wrap` (a command prefix, such as tests/support/kubelet.with_hosts's)."""
    python = require_litellm()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {"model_list": list(config_models), "general_settings": {"master_key": MASTER_KEY}}
        )
    )
    port = free_port()
    log = workdir / "litellm.log"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*wrap, str(python), "-m", "tests.support.litellm_server", str(config), str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
    proxy = Proxy(f"http://127.0.0.1:{port}", process, log, workdir)

    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(
                f"LiteLLM exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        return _alive(proxy.url)

    try:
        wait_until(up, timeout=START_TIMEOUT, interval=0.5, what="LiteLLM /health/liveliness")
    except BaseException:
        proxy.stop()
        raise
    return proxy


def config_model(api_base: str, **params: str) -> dict[str, Any]:
    """The config.yaml entry "config-model" (id config-1), which the sync must never touch."""
    return {
        "model_name": "config-model",
        "litellm_params": {"model": "openai/cfg", "api_base": api_base, **params},
        "model_info": {"id": "config-1"},
    }


@contextlib.contextmanager
def running_proxy(workdir: Path, api_base: str, **params: str) -> Iterator[Proxy]:
    """The proxy with config_model(api_base, **params), stopped at the end (cleanly)."""
    started = start_proxy(workdir, [config_model(api_base, **params)])
    try:
        yield started
    finally:
        assert started.stop() in (0, -15), started.log.read_text()[-3000:]


def providers_plan(size: int, base_url: str, *, moved: str | None = None) -> Plan:
    """The plan of `size` ExternalModelProviders p0, p1, ... of one model each (m0, m1, ...) at
    `base_url` (p0's at `moved` when given), with the shipped configs."""
    providers = [
        external_model_provider(
            f"p{i}",
            "gw",
            baseURL=moved if moved is not None and i == 0 else base_url,
            models=[{"servedName": f"m{i}"}],
        )
        for i in range(size)
    ]
    registry = build_registry(bundled_config_objects(), flags={})
    return plan([], providers, registry=registry, pins=bundled_versions(), destinations=LOOPBACK)


def write_objects(folder: Path, *objects: Mapping[str, Any]) -> Path:
    """Replace the YAML files in `folder` with one file per object."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    for i, obj in enumerate(objects):
        (folder / f"{i:02d}.yaml").write_text(yaml.safe_dump(dict(obj)))
    return folder


def runway(*args: str, key_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`runway ARGS` (with --master-key-file for gateway-sync), its output captured."""
    extra = ["--master-key-file", str(key_file)] if key_file is not None else []
    return subprocess.run(
        [str(RUNWAY), *args, *extra],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
