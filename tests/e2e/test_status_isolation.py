"""Issue #40, items 6 and 7, against a real kube-apiserver (its own, so that the health pass's
status writes to cluster-wide provider configs reach no other test's):

* label selectors: for generated token soups, Runway's parser (core/checks/labelselectors.py)
  refuses exactly what the API server answers 400 for;
* a provider config whose health selector the API server refuses (`"app in (a, b"`, created
  here without the webhook) gets HealthAnnotationInvalid, and every other config, one created
  later included, gets its status and heartbeat; before, every pass ended at `(400)`;
* a DynamoGraphDeployment whose services sum past int32 gives a Running ModelDeployment with
  its replicas clamped; before, every status write was refused (422) and the model stayed
  Pending.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from controller.run import Running
from core.checks.labelselectors import problem
from kubeio.yamlio import dump
from tests.support.builders import provider_config
from tests.support.cluster import Cluster, start_cluster
from tests.support.paths import EXAMPLES
from tests.support.status import LEASE, controller
from tests.support.wait import wait_until

INT32_MAX = 2**31 - 1
TOKENS = st.sampled_from(
    [
        *("a", "app", "x.y/z", "A-1", "in", "notin", "(", ")", ",", " ", "!", "=", "==", "!="),
        *(">", "<", "1", "-1", "007", "", "\t", "-", "_", "é", "a/b/c", "9" * 20, "k" * 64, "\x00"),
    ]
)


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = start_cluster(tmp_path_factory.mktemp("isolation"))
    try:
        yield started
    finally:
        started.stop()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(TOKENS, max_size=8).map("".join))
def test_the_parser_refuses_exactly_what_the_api_server_refuses(own: Cluster, text: str) -> None:
    api = kubernetes.client.CoreV1Api(own.api_client())
    try:
        api.list_namespaced_pod("default", label_selector=text)
        status = 200
    except kubernetes.client.ApiException as err:
        status = err.status
    finally:
        api.api_client.close()
    assert (status, problem(text) is None) in ((200, True), (400, False))


def finished(running: Running) -> None:
    """Until the stopped controller has released its Lease and ended its last write."""
    for thread in running.threads:
        if thread.name in ("lease", "worker"):
            thread.join(timeout=LEASE + 10)


def config_status(own: Cluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        own.kubectl("get", f"inferenceproviderconfig/{name}", "-o", "json").stdout
    )
    return found.get("status") or {}


def test_a_bad_health_selector_fails_its_own_config_only(own: Cluster) -> None:
    tag = uuid.uuid4().hex[:6]
    bad, good, new = f"bad-{tag}", f"good-{tag}", f"new-{tag}"
    health = {"operatorPods": [{"namespace": "default", "selectors": ["app in (a, b"]}]}
    own.apply_manifests(
        dump(provider_config(bad, annotations={"airunway.ai/health": json.dumps(health)}))
    )
    own.apply_manifests(dump(provider_config(good)))
    own.kubectl("create", "namespace", f"lease-{tag}")
    api = own.api_client()
    stop = threading.Event()
    running = controller(api, f"lease-{tag}", "health", stop, health=1.0)
    try:
        wait_until(
            lambda: config_status(own, bad) and config_status(own, good),
            timeout=60,
            what="both configs' statuses",
        )
        own.apply_manifests(dump(provider_config(new)))
        wait_until(lambda: config_status(own, new), timeout=60, what="the new config's status")
        statuses = {n: config_status(own, n) for n in (bad, good, new)}
    finally:
        stop.set()
        finished(running)
        api.close()
        own.kubectl("delete", "inferenceproviderconfig", bad, good, new, check=False)

    assert {n: (s["ready"], s["conditions"][0]["reason"]) for n, s in statuses.items()} == {
        bad: (False, "HealthAnnotationInvalid"),
        good: (True, "UpstreamReady"),
        new: (True, "UpstreamReady"),
    }
    assert all(s["lastHeartbeat"] for s in statuses.values())


def test_upstream_counts_past_int32_are_clamped(own: Cluster, tmp_path: Path) -> None:
    namespace = f"int32-{uuid.uuid4().hex[:6]}"
    own.kubectl("create", "namespace", namespace)
    doc = yaml.safe_load((EXAMPLES / "dynamo-mocker.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "md.yaml").write_text(dump(doc))
    assert main(["render", str(tmp_path / "sources"), "--repo", str(tmp_path / "repo")]) == 0
    assert (
        main(["apply", str(tmp_path / "repo" / "rendered"), "--kubeconfig", str(own.kubeconfig)])
        == 0
    )
    name = doc["metadata"]["name"]

    def full(component: str) -> dict[str, Any]:  # as the operator writes a service's status
        return {
            "componentKind": "Deployment",
            "componentName": f"{name}-{component.lower()}",
            "replicas": INT32_MAX,
            "updatedReplicas": INT32_MAX,
            "readyReplicas": INT32_MAX,
            "availableReplicas": INT32_MAX,
        }

    status = {
        "state": "successful",
        "observedGeneration": 1,
        "services": {c: full(c) for c in ("Frontend", "VllmWorker")},
    }
    own.kubectl(
        "patch", f"dynamographdeployment.nvidia.com/{name}", "-n", namespace,
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    api = own.api_client()
    stop = threading.Event()
    running = controller(api, namespace, "int32", stop)
    started = time.monotonic()

    def model() -> dict[str, Any] | None:
        md: dict[str, Any] = json.loads(
            own.kubectl(
                "get", f"modeldeployment.airunway.ai/{name}", "-n", namespace, "-o", "json"
            ).stdout
        )
        return md if (md.get("status") or {}).get("phase") == "Running" else None

    try:
        found = wait_until(model, timeout=60, interval=0.3, what="Running")
        print(f"DGD past int32: Running after {time.monotonic() - started:.1f} s")
    finally:
        stop.set()
        finished(running)
        api.close()
    assert found is not None
    assert found["status"]["replicas"] == {
        "desired": INT32_MAX,
        "ready": INT32_MAX,
        "available": INT32_MAX,
    }
