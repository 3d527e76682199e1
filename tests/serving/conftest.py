"""The serving tier's fixtures (tests/support/servingtier.py says what stands in): the examples
rendered once with `runway render`, the stand-in pods, and the real LiteLLM proxy that reaches
them by their Services' DNS names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import kubelet
from tests.support.litellm import start_proxy
from tests.support.servingtier import Gateway, Pods, Rendered, render

# Every example the tier serves; llm-d's is behind an inference Gateway, named here.
EXAMPLES = ("vllm-direct-explicit.yaml", "llmd-explicit.yaml", "dynamo-mocker.yaml")
GATEWAY = "gateway-system/inference"


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return render(tmp_path_factory.mktemp("serving-repo"), *EXAMPLES, gateway=GATEWAY)


@pytest.fixture(scope="session")
def pods() -> Iterator[Pods]:
    kubelet.require_root()
    running = Pods()
    try:
        yield running
    finally:
        running.stop_all()


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """LiteLLM in a mount namespace of its own, whose /etc/hosts is the tier's hosts file."""
    kubelet.require_root()
    workdir = tmp_path_factory.mktemp("serving-litellm")
    hosts = kubelet.hosts_file(workdir / "hosts", {})
    proxy = start_proxy(workdir, [], wrap=kubelet.with_hosts(hosts, []))
    try:
        yield Gateway(proxy, hosts)
    finally:
        proxy.stop()
