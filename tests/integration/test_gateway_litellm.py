"""`runway gateway-sync` against a real LiteLLM proxy (litellm[proxy], pinned in pyproject.toml).

Real: LiteLLM's proxy app in its own process on 127.0.0.1, with LITELLM_LOCAL_MODEL_COST_MAP=True
(so it fetches nothing at startup): its master-key authentication, /model/info, /v1/models, its
router, and the chat completion it forwards to an upstream. Real: `runway gateway-sync` and
`runway gateway-plan` as subprocesses.

Substituted: ONLY the persistence behind POST /model/new, /model/update and /model/delete.
LiteLLM's own handlers need its Prisma-backed database, and Prisma's native query engine is
shipped by no package registry, so they cannot run here. tests/support/litellm_server.py replaces
those three routes with handlers that keep their request/response contract (same request models,
same auth dependency, same answers and error codes) and apply the write to the proxy's own
in-memory router with Router.upsert_deployment / Router.delete_deployment, which is what LiteLLM
does after its database write. The provider is a small OpenAI-compatible server on loopback
(FakeUpstream in tests/support/answers.py), standing in for a real provider the tests cannot reach.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.model.servednames import LITERAL
from tests.support.answers import FakeUpstream, Hit
from tests.support.builders import external_model_provider
from tests.support.litellm import RUNWAY, Proxy, running_proxy, runway, write_objects
from tests.support.wait import wait_until

KEY_A = "sk-provider-a-0123456789abcdef"
KEY_ROTATED = "sk-provider-a-rotated-fedcba9876543210"
REQUESTED_BY = "gateway.tokenfactory.mirantis.com/requested-by"


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[FakeUpstream, FakeUpstream, FakeUpstream]]:
    started = (FakeUpstream("A").start(), FakeUpstream("B").start(), FakeUpstream("config").start())
    try:
        yield started
    finally:
        for upstream in started:
            upstream.stop()


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: tuple[FakeUpstream, FakeUpstream, FakeUpstream],
) -> Iterator[Proxy]:
    with running_proxy(
        tmp_path_factory.mktemp("litellm"), upstreams[2].url, api_key="sk-config-model-key"
    ) as started:
        yield started


@pytest.fixture
def workdir(tmp_path: Path, proxy: Proxy) -> Iterator[Path]:
    (tmp_path / "master.key").write_text("sk-master-runway-test\n")
    yield tmp_path
    # Leave LiteLLM as found: a sync with no objects removes everything runway registered.
    write_objects(tmp_path / "empty")
    done = sync(proxy, tmp_path, tmp_path / "empty")
    assert done.returncode == 0, done.stderr
    assert sorted(proxy.entries()) == ["config-1"]


def secret(name: str, value: str, namespace: str = "gw") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"apiKey": base64.b64encode(value.encode()).decode()},
    }


def provider(name: str, base_url: str, *served: str, who: str | None = None) -> dict[str, Any]:
    obj = external_model_provider(
        name,
        "gw",
        baseURL=base_url,
        credentialsSecretRef={"name": f"{name}-key", "key": "apiKey"},
        models=[{"servedName": s, "upstreamModel": f"up-{s}"} for s in served],
    )
    if who is not None:
        obj["metadata"]["annotations"] = {REQUESTED_BY: who}
    return obj


def sync(proxy: Proxy, workdir: Path, sources: Path) -> subprocess.CompletedProcess[str]:
    """`runway -v gateway-sync --once` from files, Secrets from workdir/secrets."""
    return runway(
        "-v",
        "gateway-sync",
        "--once",
        "--allow-destination",
        "127.0.0.1",  # the stand-in upstreams listen on loopback
        "--litellm-url",
        proxy.url,
        "--from",
        str(sources),
        "--secrets-dir",
        str(workdir / "secrets"),
        key_file=workdir / "master.key",
    )


def test_sync_registers_a_provider_and_traffic_reaches_it(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    upstream = upstreams[0]
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    sources = write_objects(
        workdir / "objects", provider("openai", upstream.url, "gpt-x", who="alice@example.com")
    )

    done = sync(proxy, workdir, sources)

    assert (done.returncode, done.stdout.splitlines()) == (
        0,
        [
            "Registered         gpt-x  ExternalModelProvider/gw/openai  requested-by=alice@example.com"
            '  servedName "gpt-x": registered and confirmed in LiteLLM'
        ],
    )
    assert proxy.models() == ["config-model", "gpt-x"]
    entry = proxy.entries()["runway:emp:gw:openai:gpt-x"]
    assert (entry["model_name"], entry["litellm_params"]["api_base"]) == ("gpt-x", upstream.url)
    assert {k: entry["model_info"].get(k) for k in ("runway_owner", "requested_by", "mode")} == {
        "runway_owner": "ExternalModelProvider/gw/openai",
        "requested_by": "alice@example.com",
        "mode": "chat",
    }
    assert "api_key" not in entry["litellm_params"]
    before = len(upstream.hits)
    status, answer = proxy.chat("gpt-x")
    assert (status, answer["choices"][0]["message"]["content"]) == (200, "hello from A")
    assert [(h.model, h.authorization) for h in upstream.hits[before:]] == [
        ("up-gpt-x", f"Bearer {KEY_A}")
    ]
    # Nothing secret in what the sync printed or logged (-v: INFO on stderr).
    assert KEY_A not in done.stdout + done.stderr
    assert "sk-master-runway-test" not in done.stdout + done.stderr
    assert "gateway-sync new id=runway:emp:gw:openai:gpt-x served=gpt-x" in done.stderr


def test_changing_the_base_url_moves_the_traffic(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    a, b = upstreams[0], upstreams[1]
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    assert (
        sync(
            proxy, workdir, write_objects(workdir / "o", provider("openai", a.url, "m1"))
        ).returncode
        == 0
    )
    assert proxy.chat("m1")[1]["choices"][0]["message"]["content"] == "hello from A"

    done = sync(proxy, workdir, write_objects(workdir / "o", provider("openai", b.url, "m1")))

    assert done.returncode == 0, done.stdout
    assert "gateway-sync update id=runway:emp:gw:openai:m1 served=m1" in done.stderr
    assert proxy.entries()["runway:emp:gw:openai:m1"]["litellm_params"]["api_base"] == b.url
    before = len(b.hits)
    assert proxy.chat("m1")[1]["choices"][0]["message"]["content"] == "hello from B"
    assert [h.model for h in b.hits[before:]] == ["up-m1"]


def test_a_rotated_secret_is_registered_again(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    upstream = upstreams[0]
    sources = write_objects(workdir / "o", provider("openai", upstream.url, "m2"))
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    assert sync(proxy, workdir, sources).returncode == 0

    write_objects(workdir / "secrets", secret("openai-key", KEY_ROTATED))
    done = sync(proxy, workdir, sources)

    assert done.returncode == 0, done.stdout
    before = len(upstream.hits)
    assert proxy.chat("m2")[0] == 200
    assert [h.authorization for h in upstream.hits[before:]] == [f"Bearer {KEY_ROTATED}"]
    assert KEY_ROTATED not in done.stdout + done.stderr


def test_deleting_the_provider_removes_its_models_and_nothing_else(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    assert (
        sync(
            proxy, workdir, write_objects(workdir / "o", provider("openai", upstreams[0].url, "m3"))
        ).returncode
        == 0
    )
    # An entry someone else made through the same API: the sync must never touch it.
    manual = {
        "model_name": "manual",
        "litellm_params": {"model": "openai/x", "api_base": upstreams[1].url, "api_key": "sk-man"},
        "model_info": {"id": "manual-1"},
    }
    assert proxy.call("/model/new", manual)[0] == 200

    done = sync(proxy, workdir, write_objects(workdir / "o"))

    assert (done.returncode, done.stdout) == (0, "")
    assert "gateway-sync deleted id=runway:emp:gw:openai:m3" in done.stderr
    assert proxy.models() == ["config-model", "manual"]
    assert sorted(proxy.entries()) == ["config-1", "manual-1"]
    status, answer = proxy.chat("m3")
    assert status == 400
    assert "Invalid model name passed in model=m3" in answer["error"]["message"]
    assert proxy.call("/model/delete", {"id": "manual-1"})[0] == 200


def test_litellm_alone_load_balances_a_duplicate_name(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...]
) -> None:
    """Why the merge boundary exists: two entries with one model_name are both served."""
    a, b = upstreams[0], upstreams[1]
    for i, upstream in enumerate((a, b)):
        body = {
            "model_name": "dup",
            "litellm_params": {"model": "openai/d", "api_base": upstream.url, "api_key": "sk-x"},
            "model_info": {"id": f"dup-{i}"},
        }
        assert proxy.call("/model/new", body)[0] == 200
    try:
        answers = {proxy.chat("dup")[1]["choices"][0]["message"]["content"] for _ in range(30)}
        assert answers == {"hello from A", "hello from B"}
    finally:
        for i in range(2):
            assert proxy.call("/model/delete", {"id": f"dup-{i}"})[0] == 200


def test_a_duplicate_served_name_registers_neither_claimant(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    write_objects(
        workdir / "secrets", secret("first-key", KEY_A), secret("second-key", KEY_ROTATED)
    )
    sources = write_objects(
        workdir / "o",
        provider("first", upstreams[0].url, "dup", "only-first"),
        provider("second", upstreams[1].url, "dup"),
    )

    done = sync(proxy, workdir, sources)

    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        'Conflict           dup  ExternalModelProvider/gw/first  servedName "dup" is also claimed by ExternalModelProvider/gw/second; no claimant is registered',
        'Registered         only-first  ExternalModelProvider/gw/first  servedName "only-first": registered and confirmed in LiteLLM',
        'Conflict           dup  ExternalModelProvider/gw/second  servedName "dup" is also claimed by ExternalModelProvider/gw/first; no claimant is registered',
    ]
    assert proxy.models() == ["config-model", "only-first"]
    assert proxy.chat("dup")[0] == 400
    plan = runway("gateway-plan", str(sources), "--allow-destination", "127.0.0.1", "-o", "json")
    assert plan.returncode == 1
    assert json.loads(plan.stdout)["conflicts"] == [
        {
            "servedName": "dup",
            "claimants": [
                {"kind": "ExternalModelProvider", "namespace": "gw", "name": "first"},
                {"kind": "ExternalModelProvider", "namespace": "gw", "name": "second"},
            ],
        }
    ]
    # Removing one claimant frees the name for the other.
    again = sync(
        proxy, workdir, write_objects(workdir / "o", provider("second", upstreams[1].url, "dup"))
    )
    assert again.returncode == 0, again.stdout
    assert proxy.chat("dup")[1]["choices"][0]["message"]["content"] == "hello from B"


def test_a_500_from_model_new_is_rechecked_not_taken_as_failure(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    assert proxy.call("/test/fail-next-new", {}) == (200, {"armed": True})

    done = sync(
        proxy, workdir, write_objects(workdir / "o", provider("openai", upstreams[0].url, "m4"))
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "/model/new answered HTTP 500 (re-checked in /model/info)" in done.stderr
    assert done.stdout.startswith("Registered         m4  ExternalModelProvider/gw/openai")
    assert proxy.chat("m4")[0] == 200


def test_a_missing_secret_fails_the_model_without_registering_it(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    write_objects(workdir / "secrets")

    done = sync(
        proxy, workdir, write_objects(workdir / "o", provider("openai", upstreams[0].url, "m5"))
    )

    assert (done.returncode, done.stdout) == (
        1,
        'SecretUnavailable  m5  ExternalModelProvider/gw/openai  servedName "m5": Secret gw/openai-key not found\n',
    )
    assert "m5" not in proxy.models()


def test_litellm_started_without_reaching_out(proxy: Proxy) -> None:
    """LITELLM_LOCAL_MODEL_COST_MAP=True: no cost-map download (whose failure LiteLLM logs as a
    name-resolution error) or any other outbound attempt shows in the proxy's log."""
    log = proxy.log.read_text(errors="replace")

    assert log.splitlines()[:2] == [
        "\x1b[32mLiteLLM: Proxy initialized with Config, Set models:\x1b[0m",
        "\x1b[32m    config-model\x1b[0m",
    ]
    for sign in ("getaddrinfo", "Name or service not known", "githubusercontent", "ConnectError"):
        assert sign not in log


def test_the_loop_follows_changes_and_stops_on_sigterm(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    upstream = upstreams[0]
    write_objects(workdir / "secrets", secret("openai-key", KEY_A))
    sources = write_objects(workdir / "o", provider("openai", upstream.url, "looped"))
    loop = subprocess.Popen(
        [
            str(RUNWAY),
            "gateway-sync",
            "--allow-destination",
            "127.0.0.1",
            "--interval",
            "0.5",
            "--litellm-url",
            proxy.url,
            "--from",
            str(sources),
            "--secrets-dir",
            str(workdir / "secrets"),
            "--master-key-file",
            str(workdir / "master.key"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: "looped" in proxy.models(), timeout=60, what="looped registered")
        write_objects(workdir / "secrets", secret("openai-key", KEY_ROTATED))

        def rotated() -> bool:
            before = len(upstream.hits)
            proxy.chat("looped")
            return upstream.hits[before:] == [
                Hit("/v1/chat/completions", "up-looped", f"Bearer {KEY_ROTATED}")
            ]

        wait_until(rotated, timeout=60, interval=0.5, what="the rotated key upstream")
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=60)
    assert loop.returncode == 0, stderr
    assert KEY_A not in stderr and KEY_ROTATED not in stderr


def test_litellm_alone_routes_every_unknown_name_to_a_wildcard_entry(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...]
) -> None:
    """Why served names are literal: LiteLLM reads `*` in a model_name as a pattern."""
    body = {
        "model_name": "*",
        "litellm_params": {"model": "openai/*", "api_base": upstreams[1].url, "api_key": "sk-x"},
        "model_info": {"id": "wild-1"},
    }
    assert proxy.call("/model/new", body)[0] == 200
    try:
        status, answer = proxy.chat("never-registered")
        assert (status, answer["choices"][0]["message"]["content"]) == (200, "hello from B")
    finally:
        assert proxy.call("/model/delete", {"id": "wild-1"})[0] == 200


def test_a_tenant_cannot_take_a_wildcard_or_an_established_name(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    """Issue #18 item 13: a tenant's `*`/`openai/*` is never registered, and its claim of the
    platform's established gpt-4o is refused while the platform keeps serving it."""
    platform, tenant = upstreams[0], upstreams[1]
    write_objects(
        workdir / "secrets", secret("platform-key", KEY_A), secret("tenant-key", KEY_ROTATED)
    )
    first = sync(
        proxy, workdir, write_objects(workdir / "o", provider("platform", platform.url, "gpt-4o"))
    )
    assert first.returncode == 0, first.stdout

    done = sync(
        proxy,
        workdir,
        write_objects(
            workdir / "o",
            provider("platform", platform.url, "gpt-4o"),
            provider("tenant", tenant.url, "gpt-4o", "tenant-model"),
            provider("wild", tenant.url, "*", "openai/*"),
        ),
    )

    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        'Registered         gpt-4o  ExternalModelProvider/gw/platform  servedName "gpt-4o": registered and confirmed in LiteLLM',
        'Conflict           gpt-4o  ExternalModelProvider/gw/tenant  servedName "gpt-4o" is already registered in LiteLLM by ExternalModelProvider/gw/platform, which keeps it; this claim is refused',
        'Registered         tenant-model  ExternalModelProvider/gw/tenant  servedName "tenant-model": registered and confirmed in LiteLLM',
        f"Skipped            ExternalModelProvider/gw/wild: spec.models[0].servedName: Invalid value: {LITERAL}; spec.models[1].servedName: Invalid value: {LITERAL}",
    ]
    assert (
        "WARNING gateway.sync gateway-sync conflict served=gpt-4o "
        "claimant=ExternalModelProvider/gw/tenant holder=ExternalModelProvider/gw/platform "
        "others=ExternalModelProvider/gw/platform"
    ) in done.stderr.splitlines()
    assert proxy.models() == ["config-model", "gpt-4o", "tenant-model"]
    answers = {proxy.chat("gpt-4o")[1]["choices"][0]["message"]["content"] for _ in range(10)}
    assert answers == {"hello from A"}
    status, answer = proxy.chat("never-registered")
    assert status == 400
    assert "Invalid model name passed in model=never-registered" in answer["error"]["message"]


def test_a_name_litellm_routes_to_its_own_config_is_refused_to_every_claimant(
    proxy: Proxy, upstreams: tuple[FakeUpstream, ...], workdir: Path
) -> None:
    """Joining the group of config-model would take a share of the platform's traffic."""
    write_objects(workdir / "secrets", secret("tenant-key", KEY_A))

    done = sync(
        proxy,
        workdir,
        write_objects(workdir / "o", provider("tenant", upstreams[0].url, "config-model")),
    )

    assert (done.returncode, done.stdout.splitlines()) == (
        1,
        [
            'Conflict           config-model  ExternalModelProvider/gw/tenant  servedName "config-model" is already registered in LiteLLM by LiteLLM entry config-1 (not created by runway), which keeps it; this claim is refused'
        ],
    )
    answers = {proxy.chat("config-model")[1]["choices"][0]["message"]["content"] for _ in range(10)}
    assert answers == {"hello from config"}
