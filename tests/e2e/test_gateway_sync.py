"""`runway gateway-sync --once` against the real API server and a real LiteLLM proxy: it reads
ExternalModelProviders, ModelDeployments and Secrets through the API server, registers in LiteLLM
(tests/support/litellm_server.py: only the persistence of /model/new|update|delete is
substituted, see its docstring), and writes ExternalModelProvider status through the status
subresource. Also: the requested-by annotation is immutable at admission (real webhook)."""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from core.model.kinds import EMP_GROUP, EXTERNAL_MODEL_PROVIDER_PLURAL, VERSION
from gateway.apikeys import CONSENT_LABEL
from tests.support.answers import FakeUpstream
from tests.support.builders import external_model_provider, model_deployment
from tests.support.cluster import Cluster
from tests.support.litellm import MASTER_KEY, ROOT, Proxy, runway, start_proxy
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

REQUESTED_BY = "gateway.tokenfactory.mirantis.com/requested-by"
KEY = "sk-e2e-provider-key-0123456789"
CONSENT = {CONSENT_LABEL: "true"}  # the owner's consent to its use as a LiteLLM credential


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    started = FakeUpstream("provider").start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream) -> Iterator[Proxy]:
    config_model = {
        "model_name": "config-model",
        "litellm_params": {"model": "openai/c", "api_base": upstream.url, "api_key": "sk-c"},
        "model_info": {"id": "config-1"},
    }
    started = start_proxy(tmp_path_factory.mktemp("litellm"), [config_model])
    try:
        yield started
    finally:
        started.stop()


def create(cluster: Cluster, obj: dict[str, Any]) -> None:
    done = cluster.strict_apply(obj)
    assert done.returncode == 0, done.stderr


def status_of(api: kubernetes.client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    custom = kubernetes.client.CustomObjectsApi(api)
    obj: Any = custom.get_namespaced_custom_object(
        EMP_GROUP, VERSION, namespace, EXTERNAL_MODEL_PROVIDER_PLURAL, name
    )
    return dict(obj.get("status") or {})


def sync(cluster: Cluster, proxy: Proxy, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    key_file = tmp_path / "master.key"
    key_file.write_text(MASTER_KEY)
    return runway(
        "-v",
        "gateway-sync",
        "--once",
        "--allow-destination",
        "127.0.0.1",  # the stand-in upstreams listen on loopback
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--litellm-url",
        proxy.url,
        key_file=key_file,
    )


def without_times(status: dict[str, Any]) -> dict[str, Any]:
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]
    ]
    return {**status, "conditions": conditions}


def test_sync_writes_ready_and_conflict_status_through_the_api_server(
    cluster: Cluster,
    api: kubernetes.client.ApiClient,
    namespace: str,
    proxy: Proxy,
    upstream: FakeUpstream,
    tmp_path: Path,
) -> None:
    shared, solo = f"shared-{namespace}", f"solo-{namespace}"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "provider-key", "namespace": namespace, "labels": CONSENT},
        "data": {"apiKey": base64.b64encode(KEY.encode()).decode()},
    }
    ready = external_model_provider(
        "ready", namespace, baseURL=upstream.url, models=[{"servedName": solo}]
    )
    ready["metadata"]["annotations"] = {REQUESTED_BY: "alice@example.com"}
    clashing = external_model_provider(
        "clashing", namespace, baseURL=upstream.url, models=[{"servedName": shared}]
    )
    deployment = model_deployment(
        "llama", namespace, model={"id": "org/model", "servedName": shared}, gpu=1, provider="vllm"
    )
    for obj in (secret, ready, clashing, deployment):
        create(cluster, obj)

    done = sync(cluster, proxy, tmp_path)

    ours = [line for line in done.stdout.splitlines() if namespace in line]
    assert ours == [
        f'Conflict           {shared}  ExternalModelProvider/{namespace}/clashing  servedName "{shared}" is also claimed by ModelDeployment/{namespace}/llama; no claimant is registered',
        f'Registered         {solo}  ExternalModelProvider/{namespace}/ready  requested-by=alice@example.com  servedName "{solo}": registered and confirmed in LiteLLM',
        f'Conflict           {shared}  ModelDeployment/{namespace}/llama  servedName "{shared}" is also claimed by ExternalModelProvider/{namespace}/clashing; no claimant is registered',
    ]
    assert done.returncode == 1  # a conflict
    assert KEY not in done.stdout + done.stderr
    assert without_times(status_of(api, namespace, "ready")) == {
        "phase": "Ready",
        "message": "1 model(s) registered and confirmed in LiteLLM",
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Registered",
                "message": "1 model(s) registered and confirmed in LiteLLM",
                "observedGeneration": 1,
            },
            {
                "type": "ServedNamesUnique",
                "status": "True",
                "reason": "Unique",
                "message": "no servedName is claimed elsewhere",
                "observedGeneration": 1,
            },
        ],
        "models": [
            {
                "servedName": solo,
                "id": f"runway:emp:{namespace}:ready:{solo}",
                "registered": True,
                "reason": "Registered",
            }
        ],
    }
    conflict = (
        f'servedName "{shared}" is also claimed by ModelDeployment/{namespace}/llama; '
        "no claimant is registered"
    )
    assert without_times(status_of(api, namespace, "clashing")) == {
        "phase": "Conflict",
        "message": conflict,
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "Conflict",
                "message": conflict,
                "observedGeneration": 1,
            },
            {
                "type": "ServedNamesUnique",
                "status": "False",
                "reason": "Conflict",
                "message": conflict,
                "observedGeneration": 1,
            },
        ],
        "models": [
            {
                "servedName": shared,
                "id": f"runway:emp:{namespace}:clashing:{shared}",
                "registered": False,
                "reason": "Conflict",
                "claimants": [
                    f"ExternalModelProvider/{namespace}/clashing",
                    f"ModelDeployment/{namespace}/llama",
                ],
            }
        ],
    }
    assert solo in proxy.models() and shared not in proxy.models()
    entry = proxy.entries()[f"runway:emp:{namespace}:ready:{solo}"]
    assert entry["model_info"]["requested_by"] == "alice@example.com"
    status, answer = proxy.chat(solo)
    assert (status, answer["choices"][0]["message"]["content"]) == (200, "hello from provider")
    assert upstream.hits[-1].authorization == f"Bearer {KEY}"

    # The ModelDeployment gives the name up: the provider's model is registered next pass.
    kubernetes.client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "airunway.ai", "v1alpha1", namespace, "modeldeployments", "llama"
    )
    again = sync(cluster, proxy, tmp_path)

    assert [line.split()[0] for line in again.stdout.splitlines() if namespace in line] == [
        "Registered",
        "Registered",
    ]
    assert status_of(api, namespace, "clashing")["phase"] == "Ready"
    assert shared in proxy.models()


def test_requested_by_cannot_be_changed_after_create(
    cluster: Cluster, registered: Webhook, namespace: str
) -> None:
    cluster.kubectl("label", "namespace", namespace, "runway.test/webhook=enabled")
    emp = external_model_provider("attributed", namespace)
    emp["metadata"]["annotations"] = {REQUESTED_BY: "alice@example.com"}
    assert cluster.strict_apply(emp).returncode == 0

    emp["metadata"]["annotations"] = {REQUESTED_BY: "mallory@example.com"}
    changed = cluster.strict_apply(emp)

    assert changed.returncode == 1
    assert (
        "metadata.annotations[gateway.tokenfactory.mirantis.com/requested-by]: Immutable: "
        "is set when the provider is created and cannot be added, changed or removed later"
    ) in changed.stderr


def test_gateway_component_passes_strict_server_side_dry_run(cluster: Cluster) -> None:
    # A dry-run namespace does not exist for the objects inside it; create the (empty) one.
    cluster.kubectl("create", "namespace", "runway-gateway", check=False)
    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--validate=strict",
        "--dry-run=server",
        "-k",
        str(ROOT / "kustomize" / "gateway"),
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert sorted(done.stdout.splitlines()) == [
        "clusterrole.rbac.authorization.k8s.io/runway-gateway-sync serverside-applied (server dry run)",
        "clusterrolebinding.rbac.authorization.k8s.io/runway-gateway-sync serverside-applied (server dry run)",
        "customresourcedefinition.apiextensions.k8s.io/externalmodelproviders.gateway.tokenfactory.mirantis.com serverside-applied (server dry run)",
        "deployment.apps/runway-gateway-sync serverside-applied (server dry run)",
        "namespace/runway-gateway serverside-applied (server dry run)",
        "serviceaccount/runway-gateway-sync serverside-applied (server dry run)",
    ]


def test_status_controller_syncs_the_gateway_when_a_watch_sees_a_change(
    cluster: Cluster,
    api: kubernetes.client.ApiClient,
    namespace: str,
    proxy: Proxy,
    upstream: FakeUpstream,
    tmp_path: Path,
) -> None:
    """`runway status-controller --litellm-url`: the gateway sync runs in the controller's
    process, only while it holds the Lease, and a new ExternalModelProvider is registered at
    once, by the watch, not by the resync (set to 600 s here)."""
    key_file = tmp_path / "master.key"
    key_file.write_text(MASTER_KEY)
    process = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "runway"),
            "status-controller",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--namespace",
            namespace,
            "--lease-namespace",
            namespace,
            "--lease-seconds",
            "4",
            "--renew-seconds",
            "1",
            "--probe-port",
            "0",
            "--litellm-url",
            proxy.url,
            "--master-key-file",
            str(key_file),
            "--allow-destination",
            "127.0.0.1",
            "--gateway-interval",
            "600",
            # provider configs are cluster-wide and other tests select with them: leave their
            # status alone (provider health is tested on the live plane)
            "--health-seconds",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        coordination = kubernetes.client.CoordinationV1Api(api)

        def leading() -> bool:
            try:
                lease = coordination.read_namespaced_lease("runway-status-controller", namespace)
            except kubernetes.client.ApiException:
                return False
            return bool(lease.spec and lease.spec.holder_identity)

        wait_until(leading, timeout=30, interval=0.2, what="the controller leads")
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "provider-key", "namespace": namespace, "labels": CONSENT},
            "data": {"apiKey": base64.b64encode(KEY.encode()).decode()},
        }
        create(cluster, secret)
        # Its first gateway pass is over once a provider created now is Ready (that pass, or one
        # after it, registered it): whatever registers the next one is a pass the watch woke.
        create(
            cluster,
            external_model_provider(
                "first",
                namespace,
                baseURL=upstream.url,
                models=[{"servedName": f"first-{namespace}"}],
            ),
        )
        wait_until(
            lambda: status_of(api, namespace, "first").get("phase") == "Ready",
            timeout=30,
            interval=0.2,
            what="the controller's first gateway pass: the provider first Ready",
        )
        served = f"watched-{namespace}"
        create(
            cluster,
            external_model_provider(
                "watched", namespace, baseURL=upstream.url, models=[{"servedName": served}]
            ),
        )
        started = time.monotonic()
        ready = _ready_within(api, namespace, "watched", timeout=30)
        waited = time.monotonic() - started
        listed = proxy.models().count(served)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    # far below the 600 s resync; the controller's log says why when not
    assert (ready, waited < 30, listed) == (True, True, 1), output
    assert process.returncode == 0, output
    assert KEY not in output


def _ready_within(
    api: kubernetes.client.ApiClient, namespace: str, name: str, timeout: float
) -> bool:
    try:
        wait_until(
            lambda: status_of(api, namespace, name).get("phase") == "Ready",
            timeout=timeout,
            interval=0.2,
            what=f"the provider {name} Ready through the watch",
        )
    except TimeoutError:
        return False
    return True


def test_models_served_by_their_operators_services_are_registered_there(
    cluster: Cluster, namespace: str, proxy: Proxy, tmp_path: Path
) -> None:
    """Issue #43 row 9: KubeRay and Dynamo render no Service; their operators create
    `NAME-serve-svc` and `NAME-frontend` on 8000, and the sync registers each model there."""
    ray = model_deployment(
        "ray", namespace, model={"id": "org/model", "servedName": f"ray-{namespace}"},
        gpu=1, provider="kuberay",
    )  # fmt: skip
    graph = model_deployment(
        "graph", namespace, model={"id": "org/model", "servedName": f"graph-{namespace}"},
        gpu=1, provider="dynamo",
    )  # fmt: skip
    for obj in (ray, graph):
        create(cluster, obj)

    done = sync(cluster, proxy, tmp_path)

    assert [line.split()[:3] for line in done.stdout.splitlines() if namespace in line] == [
        ["Registered", f"graph-{namespace}", f"ModelDeployment/{namespace}/graph"],
        ["Registered", f"ray-{namespace}", f"ModelDeployment/{namespace}/ray"],
    ]
    entries = proxy.entries()
    assert [
        entries[f"runway:md:{namespace}:{name}:{name}-{namespace}"]["litellm_params"]["api_base"]
        for name in ("graph", "ray")
    ] == [
        f"http://graph-frontend.{namespace}.svc.cluster.local:8000/v1",
        f"http://ray-serve-svc.{namespace}.svc.cluster.local:8000/v1",
    ]
