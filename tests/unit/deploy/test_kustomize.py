"""The deployment manifests build with kustomize and say what the design requires."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from cli.manifests import provider_configs_yaml
from core.cel.rules import compile_problem, new_environment
from tests.support.kustomize import build
from tests.support.paths import ROOT
from webhook.app import ROUTES


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def test_base_builds_with_every_piece() -> None:
    kinds = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in build("base"))

    assert kinds == [
        "ClusterRole/runway-webhook",
        "ClusterRoleBinding/runway-webhook",
        "CustomResourceDefinition/inferenceproviderconfigs.airunway.ai",
        "CustomResourceDefinition/modeldeployments.airunway.ai",
        "Deployment/runway-webhook",
        "MutatingWebhookConfiguration/runway",
        "Namespace/runway-system",
        "NetworkPolicy/runway-webhook",
        "PodDisruptionBudget/runway-webhook",
        "Service/runway-webhook",
        "ServiceAccount/runway-webhook",
        "ValidatingWebhookConfiguration/runway",
    ]


def test_webhooks_fail_closed_and_cover_only_our_kinds() -> None:
    objects = build("base")
    hooks = [
        h
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for c in by_kind(objects, kind)
        for h in c["webhooks"]
    ]

    assert sorted(h["clientConfig"]["service"]["path"] for h in hooks) == sorted(ROUTES)
    for hook in hooks:
        assert (hook["failurePolicy"], hook["sideEffects"], hook["admissionReviewVersions"]) == (
            "Fail",
            "None",
            ["v1"],
        )
        assert hook["timeoutSeconds"] <= 10
        assert [r["operations"] for r in hook["rules"]] == [["CREATE", "UPDATE"]]
        assert {g for r in hook["rules"] for g in r["apiGroups"]} <= {
            "airunway.ai",
            "gateway.tokenfactory.mirantis.com",
        }
        if hook["rules"][0]["scope"] == "Namespaced":
            assert hook["namespaceSelector"]["matchExpressions"] == [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", "runway-system"],
                }
            ]


def test_deployment_is_highly_available_and_restricted() -> None:
    objects = build("base")
    (deployment,) = by_kind(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]

    assert deployment["spec"]["replicas"] == 2
    assert by_kind(objects, "PodDisruptionBudget")[0]["spec"]["minAvailable"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert (
        container["readinessProbe"]["httpGet"]["path"],
        container["livenessProbe"]["httpGet"]["path"],
    ) == ("/readyz", "/healthz")
    assert container["args"][:2] == ["serve", "--in-cluster"]
    assert "podAntiAffinity" in pod["affinity"]


def test_rbac_reads_provider_configs_and_asks_about_access_only() -> None:
    (role,) = by_kind(build("base"), "ClusterRole")

    assert role["rules"] == [
        {
            "apiGroups": ["airunway.ai"],
            "resources": ["inferenceproviderconfigs"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
    ]


def test_providers_kustomization_holds_the_shipped_configs() -> None:
    committed = (ROOT / "kustomize" / "providers" / "provider-configs.yaml").read_text()

    assert committed == provider_configs_yaml(), "run `make manifests` and commit the result"
    assert sorted(o["metadata"]["name"] for o in build("providers")) == [
        "dynamo",
        "kaito",
        "kuberay",
        "llmd",
        "vllm",
    ]


@pytest.mark.parametrize("kind", ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"])
def test_cert_manager_overlay_injects_the_ca(kind: str) -> None:
    objects = build("cert-manager")
    (config,) = by_kind(objects, kind)

    assert config["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "runway-system/runway-webhook"
    }
    assert by_kind(objects, "Certificate")[0]["spec"]["secretName"] == "runway-webhook-tls"


RENDERED_KINDS = [
    "airunway.ai_ModelDeployment",
    "nvidia.com_DynamoGraphDeployment",
    "kaito.sh_Workspace",
    "ray.io_RayService",
    "inference.networking.k8s.io_InferencePool",
]


def test_argocd_syncs_with_server_side_apply_and_ignores_the_injected_ca() -> None:
    apps = {o["metadata"]["name"]: o for o in build("argocd") if o["kind"] == "Application"}

    assert all(
        "ServerSideApply=true" in a["spec"]["syncPolicy"]["syncOptions"] for a in apps.values()
    )
    assert apps["runway-models"]["spec"]["source"]["path"] == "rendered"
    assert [d["kind"] for d in apps["runway"]["spec"]["ignoreDifferences"]] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]


def test_argocd_health_checks_cover_every_rendered_kind() -> None:
    data = yaml.safe_load((ROOT / "kustomize" / "argocd" / "argocd-cm-health.yaml").read_text())[
        "data"
    ]

    assert sorted(data) == sorted(f"resource.customizations.health.{k}" for k in RENDERED_KINDS)
    assert all(script.rstrip().endswith("return hs") for script in data.values())


def test_flux_health_expressions_are_valid_cel() -> None:
    (kustomization,) = [o for o in build("flux") if o["kind"] == "Kustomization"]
    expressions = kustomization["spec"]["healthCheckExprs"]
    # Flux binds the object's top-level fields as variables.
    env = new_environment(("apiVersion", "kind", "metadata", "spec", "status"))

    # ModelDeployment is left to kstatus, with no expression: the status controller writes the
    # conditions kstatus reads (Reconciling, Stalled) and the CRD defaults an unreported status
    # to observedGeneration 0 (InProgress).
    assert sorted(f"{e['apiVersion'].split('/')[0]}_{e['kind']}" for e in expressions) == sorted(
        k for k in RENDERED_KINDS if k != "airunway.ai_ModelDeployment"
    )
    assert [
        (e["kind"], key, compile_problem(env, e[key]))
        for e in expressions
        for key in ("current", "failed", "inProgress")
        if key in e
    ] == [
        (e["kind"], key, None)
        for e in expressions
        for key in ("current", "failed", "inProgress")
        if key in e
    ]
    assert kustomization["spec"]["prune"] is True and kustomization["spec"]["wait"] is True


def test_gateway_component_installs_without_the_runtime_part() -> None:
    objects = build("gateway")

    assert sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objects) == [
        "ClusterRole/runway-gateway-sync",
        "ClusterRoleBinding/runway-gateway-sync",
        "CustomResourceDefinition/externalmodelproviders.gateway.tokenfactory.mirantis.com",
        "Deployment/runway-gateway-sync",
        "Namespace/runway-gateway",
        "ServiceAccount/runway-gateway-sync",
    ]
    (crd,) = by_kind(objects, "CustomResourceDefinition")
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["properties"]["phase"]["enum"] == [
        "Pending",
        "Ready",
        "Conflict",
        "Failed",
        "Degraded",
    ]
    (role,) = by_kind(objects, "ClusterRole")
    assert [(r["resources"], r["verbs"]) for r in role["rules"]] == [
        (["externalmodelproviders"], ["get", "list", "watch"]),
        (["externalmodelproviders/status"], ["get", "patch", "update"]),
        (["modeldeployments", "inferenceproviderconfigs"], ["get", "list", "watch"]),
        (["gateways"], ["list"]),
        (["secrets"], ["list"]),
    ]
    (deployment,) = by_kind(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "gateway-sync"
    assert "--once" not in container["args"]
    assert container["env"] == [
        {
            "name": "LITELLM_MASTER_KEY",
            "valueFrom": {"secretKeyRef": {"name": "litellm-master-key", "key": "masterKey"}},
        }
    ]


def test_every_create_of_the_status_controller_is_a_dry_run_or_its_lease() -> None:
    """The dry-run role grants create; the code holds it to dryRun=All (controller/)."""
    calls = {
        (path.name, line.strip())
        for path in sorted((ROOT / "controller").glob("*.py"))
        for line in path.read_text().splitlines()
        if re.search(r"\.create(_\w+)?\(", line)
    }
    classify = (ROOT / "controller" / "classify.py").read_text()

    assert calls == {
        ("classify.py", "resource.create("),
        ("lease.py", "self._api.create_namespaced_lease(s.namespace, body)"),
    }
    assert classify.count('("dryRun", "All")') == 1


def test_status_controller_writes_only_status_and_its_lease() -> None:
    objects = build("status")

    assert sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objects) == [
        "ClusterRole/runway-status-controller",
        "ClusterRole/runway-status-controller-dry-run",
        "ClusterRoleBinding/runway-status-controller",
        "ClusterRoleBinding/runway-status-controller-dry-run",
        "Deployment/runway-status-controller",
        "Role/runway-status-controller-lease",
        "RoleBinding/runway-status-controller-lease",
        "ServiceAccount/runway-status-controller",
    ]
    role, dry_run = sorted(by_kind(objects, "ClusterRole"), key=lambda o: o["metadata"]["name"])
    # create only for dry runs (controller/classify.py), on the kinds the controller watches
    assert sorted((r["apiGroups"][0], r["resources"][0], r["verbs"]) for r in dry_run["rules"]) == [
        ("apps", "deployments", ["create"]),
        ("gateway.networking.k8s.io", "httproutes", ["create"]),
        ("inference.networking.k8s.io", "inferencepools", ["create"]),
        ("kaito.sh", "workspaces", ["create"]),
        ("leaderworkerset.x-k8s.io", "leaderworkersets", ["create"]),
        ("nvidia.com", "dynamographdeployments", ["create"]),
        ("ray.io", "rayservices", ["create"]),
    ]
    writes = [
        (r["apiGroups"], r["resources"], sorted(set(r["verbs"]) - {"get", "list", "watch"}))
        for r in role["rules"]
        if set(r["verbs"]) - {"get", "list", "watch"}
    ]
    assert writes == [
        (
            ["airunway.ai"],
            ["modeldeployments/status", "inferenceproviderconfigs/status"],
            ["update"],
        )
    ]
    (lease,) = by_kind(objects, "Role")
    assert lease["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]
    (deployment,) = by_kind(objects, "Deployment")
    spec = deployment["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert spec["replicas"] == 2 and container["args"][0] == "status-controller"
    assert (
        container["livenessProbe"]["httpGet"]["path"],
        container["readinessProbe"]["httpGet"]["path"],
    ) == (
        "/healthz",
        "/readyz",
    )


def test_the_status_controllers_gateway_sync_may_list_gateways_and_only_list_them() -> None:
    """Its in-process gateway sync registers a model with spec.gateway.gatewayRef at the address
    that Gateway's status reports (gateway/cluster.py); without the list it skips those models."""
    objects = build("status")
    role = next(
        o
        for o in by_kind(objects, "ClusterRole")
        if o["metadata"]["name"] == "runway-status-controller"
    )

    assert [
        (r["apiGroups"], r["verbs"]) for r in role["rules"] if "gateways" in r["resources"]
    ] == [(["gateway.networking.k8s.io"], ["list"])]
