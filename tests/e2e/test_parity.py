"""AI Runway parity on the real API server, through the registered webhook: the Dynamo mocker
test backend, every error at once on UPDATE, duplicate volume names, empty quantity strings."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kubeio.yamlio import dump
from tests.support.builders import model_deployment
from tests.support.cluster import Cluster
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

MOCKER = {"airunway.ai/dynamo-test-backend": "mocker"}


@pytest.fixture
def ns(cluster: Cluster, registered: Webhook) -> Iterator[str]:
    name = f"p-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", name)
    cluster.kubectl("label", "namespace", name, "runway.test/webhook=enabled")
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def stored(cluster: Cluster, name: str, ns: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        cluster.kubectl("get", "modeldeployment", name, "-n", ns, "-o", "json").stdout
    )
    return found


def refusal(done: Any) -> list[str]:
    """The field errors of a webhook denial, one per line, as kubectl prints them."""
    assert done.returncode != 0
    message = done.stderr.split("denied the request: ", 1)[1].strip()
    return [part.strip() for part in re.split(r"; (?=(?:spec|metadata)[.\[])", message)]


def test_a_cpu_only_mocker_deployment_is_admitted_and_stamped(cluster: Cluster, ns: str) -> None:
    obj = model_deployment(
        "mock", ns, model_id="Qwen/Qwen3-0.6B", provider="dynamo", annotations=MOCKER
    )
    disaggregated = model_deployment(
        "mock-pd",
        ns,
        model_id="Qwen/Qwen3-0.6B",
        provider="dynamo",
        engine="vllm",
        mode="disaggregated",
        scaling={"prefill": {"replicas": 1}, "decode": {"replicas": 1}},
        annotations=MOCKER,
    )

    done = [cluster.strict_apply(o) for o in (obj, disaggregated)]
    live = stored(cluster, "mock", ns)

    assert [(d.returncode, d.stderr) for d in done] == [(0, ""), (0, "")]
    assert live["spec"]["engine"]["type"] == "vllm"
    assert live["spec"]["resources"] == {"gpu": {"count": 0, "type": "nvidia.com/gpu"}}
    assert live["metadata"]["annotations"]["airunway.ai/engine-selected-reason"] == (
        "auto-selected: the dynamo mocker test backend runs only vllm"
    )


def test_a_mocker_with_another_engine_is_refused(cluster: Cluster, ns: str) -> None:
    obj = model_deployment(
        "mock", ns, provider="dynamo", engine="sglang", gpu=0, annotations=MOCKER
    )

    done = cluster.strict_apply(obj)

    assert refusal(done) == [
        "spec.engine.type: Unsupported value: the dynamo mocker test backend only supports the vllm engine"
    ]


def test_every_error_is_reported_at_once_on_update(cluster: Cluster, registered: Webhook) -> None:
    """An object AI Runway stored (no selection stamped: written where the webhook did not run),
    moved from dynamo to vllm on no GPU: the mutating webhook reports all three errors."""
    ns = f"p-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", ns)  # not labelled yet: the webhook skips it
    try:
        before = model_deployment("q", ns, provider="dynamo", gpu=1)
        assert cluster.strict_apply(before).returncode == 0
        assert "type" not in stored(cluster, "q", ns)["spec"]["engine"]  # nothing stamped
        cluster.kubectl("label", "namespace", ns, "runway.test/webhook=enabled")
        after = model_deployment(
            "q", ns, provider="vllm", resources={"gpu": {"count": 0}, "cpu": "abc"}
        )
        # The API server sees the new label a moment later: wait until the webhook answers.
        wait_until(
            lambda: "denied the request" in dry_run(cluster, after).stderr,
            timeout=30,
            what="the webhook to cover the namespace",
        )

        done = cluster.strict_apply(after)
    finally:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)

    assert [line.split(": ")[0] for line in refusal(done)] == [
        "spec.engine.type",
        "spec.resources.cpu",
        "spec.provider.name",
    ]
    assert refusal(done)[2] == (
        'spec.provider.name: Immutable: is immutable (was "dynamo", now "vllm"); changing it '
        "requires deleting and recreating the ModelDeployment"
    )


def dry_run(cluster: Cluster, obj: dict[str, Any]) -> Any:
    return cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=runway-tests", "-f", "-",
        stdin=dump(obj),
        check=False,
    )  # fmt: skip


def test_a_duplicate_volume_name_is_reported_on_its_name(cluster: Cluster, ns: str) -> None:
    volumes = [
        {"name": "cache", "claimName": "a", "mountPath": "/a"},
        {"name": "cache", "claimName": "b", "mountPath": "/b"},
    ]
    obj = model_deployment(
        "v", ns, gpu=1, model={"id": "org/model", "storage": {"volumes": volumes}}
    )

    # A create, not server-side apply: SSA refuses duplicate keys itself before admission.
    done = cluster.kubectl("create", "-f", "-", stdin=dump(obj), check=False)

    assert refusal(done) == ['spec.model.storage.volumes[1].name: Duplicate value: "cache"']


def test_an_empty_quantity_string_is_stored_as_unset(cluster: Cluster, ns: str) -> None:
    obj = model_deployment(
        "e", ns, engine="vllm", resources={"gpu": {"count": 1}, "cpu": "", "memory": ""}
    )

    done = cluster.strict_apply(obj)

    assert (done.returncode, done.stderr) == (0, "")
    assert stored(cluster, "e", ns)["spec"]["resources"] == {
        "gpu": {"count": 1, "type": "nvidia.com/gpu"},
        "cpu": "",
        "memory": "",
    }
