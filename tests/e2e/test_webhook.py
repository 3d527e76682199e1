"""The webhook enforcing at `kubectl apply` on a real API server.

The webhook runs as `runway serve` on 127.0.0.1 and is registered with clientConfig.url; the CA
bundle is put in place by `runway certs inject`. The configurations only match namespaces and
objects labelled runway.test/webhook=enabled, so the rest of the e2e tier is unaffected.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeio.yamlio import dump_all
from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.cluster import Cluster
from tests.support.e2e import LABEL, configurations
from tests.support.paths import ROOT
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook


@pytest.fixture
def ns(cluster: Cluster, registered: Webhook) -> Iterator[str]:
    name = f"w-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", name)
    cluster.kubectl("label", "namespace", name, "runway.test/webhook=enabled")
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def live(cluster: Cluster, kind: str, name: str, ns: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(
        cluster.kubectl("get", kind, name, "-n", ns, "-o", "json").stdout
    )
    return obj


def test_selection_is_stamped_into_the_live_object(cluster: Cluster, ns: str) -> None:
    done = cluster.strict_apply(model_deployment("llama", ns, gpu=2))
    stored = live(cluster, "modeldeployment", "llama", ns)

    assert (done.returncode, done.stderr) == (0, "")
    assert (stored["spec"]["engine"]["type"], stored["spec"]["provider"]["name"]) == (
        "vllm",
        "kuberay",
    )
    annotations = stored["metadata"]["annotations"]
    assert (
        annotations["airunway.ai/engine-selection"],
        annotations["airunway.ai/provider-selection"],
    ) == ("auto", "auto")
    assert annotations["airunway.ai/provider-selected-reason"].startswith(
        'auto-selected: rule "has(spec.resources)'
    )


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            model_deployment(
                "sec",
                gpu=1,
                provider="llmd",
                overrides={
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "a"},
                                    {"name": "b", "securityContext": {"privileged": True}},
                                ]
                            }
                        }
                    }
                },
            ),
            'spec.provider.overrides.spec.template.spec.containers[1].securityContext: Forbidden: "securityContext" may not be set through overrides: it is security-sensitive',
        ),
        (
            model_deployment(
                "count",
                gpu=1,
                engine="vllm",
                provider="kaito",
                overrides={"resource": {"count": 40}},
            ),
            "spec.provider.overrides.resource.count: Forbidden: the Workspace replica count comes from spec.scaling.replicas; set spec.scaling.replicas instead",
        ),
        (
            model_deployment(
                "typo",
                gpu=1,
                provider="dynamo",
                overrides={"epp": {"imag": "registry.example.com/epp:1"}},
            ),
            'spec.provider.overrides.epp.imag: Unknown field: not declared in the schema (did you mean "image"?)',
        ),
    ],
    ids=["security-key-in-array", "kaito-resource-count", "dynamo-epp-typo"],
)
def test_kubectl_apply_is_refused_with_the_field_path(
    obj: dict[str, Any], message: str, cluster: Cluster, ns: str
) -> None:
    obj["metadata"]["namespace"] = ns

    done = cluster.strict_apply(obj, manager="gitops")

    assert done.returncode != 0
    assert (
        'admission webhook "validate.modeldeployments.airunway.ai" denied the request: ' + message
        in done.stderr
    )


def test_changing_the_provider_on_update_is_refused(cluster: Cluster, ns: str) -> None:
    assert cluster.strict_apply(model_deployment("switch", ns, gpu=1)).returncode == 0

    done = cluster.strict_apply(
        model_deployment("switch", ns, gpu=1, engine="vllm", provider="kuberay")
    )

    assert done.returncode != 0
    assert (
        'spec.provider.name: Immutable: is immutable (was "dynamo", now "kuberay")' in done.stderr
    )
    assert live(cluster, "modeldeployment", "switch", ns)["spec"]["provider"]["name"] == "dynamo"


def test_applying_the_same_object_twice_changes_nothing_the_second_time(
    cluster: Cluster, ns: str
) -> None:
    """The CRD defaults an unreported status (observedGeneration 0), and the API server stores
    a CRD's defaults at the first write after the create: the second apply may move the
    resourceVersion once (never the generation or the spec); from then on an apply of the same
    object changes nothing."""
    obj = model_deployment("twice", ns, gpu=1)

    assert cluster.strict_apply(obj, manager="gitops").returncode == 0
    first = live(cluster, "modeldeployment", "twice", ns)
    assert cluster.strict_apply(obj, manager="gitops").returncode == 0
    second = live(cluster, "modeldeployment", "twice", ns)
    assert cluster.strict_apply(obj, manager="gitops").returncode == 0
    third = live(cluster, "modeldeployment", "twice", ns)

    assert [o["metadata"]["generation"] for o in (first, second, third)] == [1, 1, 1]
    assert first["spec"] == second["spec"] == third["spec"]
    assert second["status"] == third["status"] == {"observedGeneration": 0}
    assert third["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_provider_config_with_a_broken_rule_is_refused(
    cluster: Cluster, registered: Webhook
) -> None:
    config = provider_config("broken-rules", rules=[("true", 1), ("spec.engine.type ==", 9)])
    config["metadata"]["labels"] = LABEL

    done = cluster.strict_apply(config)

    assert done.returncode != 0
    assert (
        "spec.selectionRules[1].condition: Invalid value: line 1, column 20: "
        "Syntax error: mismatched input '<EOF>'" in done.stderr
    )


def test_external_provider_with_an_inline_key_is_refused(cluster: Cluster, ns: str) -> None:
    emp = external_model_provider(
        "inline", ns, credentialsSecretRef=None, apiKey="sk-live-do-not-store"
    )

    done = cluster.strict_apply(emp)

    assert done.returncode != 0
    assert (
        "spec.apiKey: Forbidden: credentials are never inline; reference a Secret key in spec.credentialsSecretRef"
        in done.stderr
    )
    assert "sk-live-do-not-store" not in done.stderr


def set_ready(cluster: Cluster, provider: str, ready: bool, *, check: bool = True) -> None:
    """Flip an InferenceProviderConfig's status.ready, as a provider shim's heartbeat would."""
    patch = json.dumps({"status": {"ready": ready}})
    cluster.kubectl(
        "patch",
        "inferenceproviderconfig",
        provider,
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
    )


def test_cluster_source_follows_provider_configs_and_their_readiness(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=runway-tests",
        "-k",
        str(ROOT / "kustomize" / "providers"),
    )
    watcher = start_webhook(tmp_path, args=["--kubeconfig", str(cluster.kubeconfig)], workers=1)
    cpu_only = review(model_deployment("cpu"))
    try:
        first = wait_until(
            lambda: watcher.admit("/mutate", cpu_only)["allowed"] is True,
            timeout=30,
            what="kaito from the cluster",
        )
        set_ready(cluster, "kaito", False)
        refused = wait_until(
            lambda: not watcher.admit("/mutate", cpu_only)["allowed"],
            timeout=30,
            what="kaito not ready",
        )
    finally:
        set_ready(cluster, "kaito", True, check=False)
        assert watcher.stop() == 0
    assert (first, refused) == (True, True)
    assert "provider config" in watcher.log_text()


def test_deployment_manifests_pass_strict_server_side_dry_run(cluster: Cluster) -> None:
    # A dry-run namespace does not exist for the objects inside it; create the (empty) one.
    cluster.kubectl("create", "namespace", "runway-system", check=False)
    for name in ("base", "providers", "ui"):
        done = cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--validate=strict",
            "--dry-run=server",
            "-k",
            str(ROOT / "kustomize" / name),
            check=False,
        )
        assert (name, done.returncode, done.stderr) == (name, 0, "")
        assert len(done.stdout.splitlines()) == {"base": 12, "providers": 5, "ui": 6}[name]
        assert all(
            line.endswith("serverside-applied (server dry run)")
            for line in done.stdout.splitlines()
        )


def test_configurations_fixture_is_yaml_serialisable() -> None:
    assert [
        d["kind"] for d in yaml.safe_load_all(dump_all(configurations("https://127.0.0.1:1")))
    ] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
