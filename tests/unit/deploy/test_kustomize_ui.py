"""kustomize/ui, the portal's deployment, least privilege: its ServiceAccount may ask who a token
is (TokenReview) and read cluster facts that are nobody's tenant data (CRDs, nodes, pods, the
provider configs), nothing else. Tenant objects are read and written with the signed-in user's
own token, and the apply-as-user Component (kustomize/ui/apply-as-user) only adds two flags: no
rule anywhere grants a write, a Secret, a wildcard or impersonation. The portal listens on the
pod's loopback: the oauth2-proxy sidecar is the only way in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubeio.shipped import bundled_versions
from tests.support.kustomize import build, with_apply_as_user
from tests.support.paths import ROOT

READ = ["get", "list", "watch"]
UI_RULES = [
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": READ,
    },
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": READ},
    {"apiGroups": ["airunway.ai"], "resources": ["inferenceproviderconfigs"], "verbs": READ},
    {
        "apiGroups": ["airunway.ai"],
        "resources": ["inferenceproviderconfigs/status"],
        "verbs": ["get"],
    },
]
# What the portal reads and writes only with the signed-in user's token: Runway's and the
# gateway's tenant kinds, and events (with every upstream kind the status controller reads).
TENANT = {
    ("airunway.ai", "modeldeployments"),
    ("gateway.tokenfactory.mirantis.com", "externalmodelproviders"),
    ("", "events"),
    ("", "secrets"),
}
UI_ARGS = [
    "ui",
    "--in-cluster",
    "--host",
    "127.0.0.1",
    "--port",
    "8080",
    "--secret-key-file",
    "/secrets/ui/secret-key",
    "--workers",
    "2",
]
PROXY_ARGS = [
    "--http-address=0.0.0.0:4180",
    "--upstream=http://127.0.0.1:8080/",
    "--provider=oidc",
    "--pass-access-token=true",
    "--pass-authorization-header=true",
    "--skip-auth-route=GET=^/healthz$",
    "--cookie-secure=true",
    "--cookie-samesite=lax",
    "--skip-provider-button=true",
    "--reverse-proxy=true",
    "--silence-ping-logging=true",
]
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def names(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objects)


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if (o["kind"], o["metadata"]["name"]) == (kind, name)]
    return found


def containers(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    pod = one(objects, "Deployment", "runway-ui")["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["containers"]}


def test_ui_builds_with_every_piece() -> None:
    assert names(build("ui")) == [
        "ClusterRole/runway-ui",
        "ClusterRoleBinding/runway-ui",
        "Deployment/runway-ui",
        "NetworkPolicy/runway-ui",
        "Service/runway-ui",
        "ServiceAccount/runway-ui",
    ]


def test_the_ui_role_reviews_tokens_and_reads_cluster_facts_only() -> None:
    objects = build("ui")
    binding = one(objects, "ClusterRoleBinding", "runway-ui")

    assert one(objects, "ClusterRole", "runway-ui")["rules"] == UI_RULES
    assert (binding["roleRef"]["name"], binding["subjects"]) == (
        "runway-ui",
        [{"kind": "ServiceAccount", "name": "runway-ui", "namespace": "runway-system"}],
    )


def granted(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (apiGroup, resource, verb) a Role or ClusterRole among `objects` grants."""
    return {
        (group, resource, verb)
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
        for rule in o["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_ui_holds_no_right_on_a_tenant_object() -> None:
    """ModelDeployments, ExternalModelProviders, events and every upstream kind Runway renders
    (the kinds the status controller's dry-run role may create) are read with the signed-in
    user's token: the portal's own role names none of them, nor any of their subresources."""
    (dry_run,) = [
        o
        for o in build("status")
        if (o["kind"], o["metadata"]["name"]) == ("ClusterRole", "runway-status-controller-dry-run")
    ]
    upstream = {(group, resource) for group, resource, _ in granted([dry_run])}
    ui = {(group, resource.split("/")[0]) for group, resource, _ in granted(build("ui"))}

    assert sorted(upstream) == [
        ("apps", "deployments"),
        ("gateway.networking.k8s.io", "httproutes"),
        ("inference.networking.k8s.io", "inferencepools"),
        ("kaito.sh", "workspaces"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets"),
        ("nvidia.com", "dynamographdeployments"),
        ("ray.io", "rayservices"),
    ]
    assert sorted(ui & (upstream | TENANT)) == []


def test_no_rule_grants_a_write_a_secret_a_wildcard_or_impersonation(tmp_path: Path) -> None:
    """With or without the apply-as-user Component: the one verb beyond reading is creating a
    TokenReview (which stores nothing), and no rule is narrowed by name or reaches a raw URL."""
    for objects in (build("ui"), with_apply_as_user(tmp_path / "overlay")):
        rules = [r for o in objects if o["kind"] in ("Role", "ClusterRole") for r in o["rules"]]
        grants = granted(objects)

        assert [r for r in rules if "resourceNames" in r or "nonResourceURLs" in r] == []
        assert sorted(g for g in grants if g[2] not in READ) == [
            ("authentication.k8s.io", "tokenreviews", "create")
        ]
        assert sorted(g for g in grants if "*" in "".join(g) or g[1] == "secrets") == []
        assert [o["kind"] for o in objects if o["kind"] in ("Role", "RoleBinding")] == []


def test_the_apply_as_user_component_adds_two_flags_and_no_right(tmp_path: Path) -> None:
    """The portal applies with the user's own token, never by impersonation: the Component
    turns the flags on and leaves every other object, RBAC included, as it is."""
    plain = build("ui")
    overlay = with_apply_as_user(tmp_path / "overlay")

    assert names(overlay) == names(plain)
    assert containers(overlay)["ui"]["args"] == [*UI_ARGS, "--actions", "--apply-as-user"]
    assert containers(plain)["ui"]["args"] == UI_ARGS
    for obj in plain:
        if obj["kind"] != "Deployment":
            assert one(overlay, obj["kind"], obj["metadata"]["name"]) == obj
    deployment = one(overlay, "Deployment", "runway-ui")
    deployment["spec"]["template"]["spec"]["containers"][0]["args"] = UI_ARGS
    assert deployment == one(plain, "Deployment", "runway-ui")


def test_the_portal_is_reached_only_through_the_sign_in_proxy() -> None:
    objects = build("ui")
    deployment = one(objects, "Deployment", "runway-ui")
    pod = deployment["spec"]["template"]["spec"]
    ui, proxy = containers(objects)["ui"], containers(objects)["oauth2-proxy"]
    service = one(objects, "Service", "runway-ui")["spec"]
    policy = one(objects, "NetworkPolicy", "runway-ui")["spec"]

    assert list(containers(objects)) == ["ui", "oauth2-proxy"]
    assert (pod["serviceAccountName"], pod["securityContext"]) == (
        "runway-ui",
        {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    )
    assert (ui["args"], "ports" in ui) == (UI_ARGS, False)
    assert (proxy["args"], proxy["ports"]) == (
        PROXY_ARGS,
        [{"name": "http", "containerPort": 4180, "protocol": "TCP"}],
    )
    assert proxy["envFrom"] == [{"secretRef": {"name": "runway-ui-oauth2-proxy"}}]
    assert (ui["securityContext"], proxy["securityContext"]) == (RESTRICTED, RESTRICTED)
    assert [
        (c["name"], probe, c[probe]["httpGet"])
        for c in (ui, proxy)
        for probe in ("readinessProbe", "livenessProbe")
    ] == [
        ("ui", "readinessProbe", {"path": "/healthz", "port": 4180}),
        ("ui", "livenessProbe", {"path": "/healthz", "port": 4180}),
        ("oauth2-proxy", "readinessProbe", {"path": "/ready", "port": "http"}),
        ("oauth2-proxy", "livenessProbe", {"path": "/ping", "port": "http"}),
    ]
    assert all(set(c["resources"]) == {"requests", "limits"} for c in (ui, proxy))
    assert ui["volumeMounts"] == [
        {"name": "secret-key", "mountPath": "/secrets/ui", "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
        {
            "name": "kube-api-access",
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        },
    ]
    # the ServiceAccount's token is in the portal's container only, not the proxy's
    assert (pod["automountServiceAccountToken"], "volumeMounts" in proxy) == (False, False)
    assert pod["volumes"][2]["projected"]["sources"][0] == {
        "serviceAccountToken": {"path": "token", "expirationSeconds": 3607}
    }
    assert pod["volumes"][0] == {
        "name": "secret-key",
        "secret": {"secretName": "runway-ui-secret-key"},
    }
    assert (service["selector"], service["ports"]) == (
        {"app.kubernetes.io/name": "runway-ui"},
        [{"name": "http", "port": 4180, "targetPort": "http", "protocol": "TCP"}],
    )
    assert policy["ingress"] == [{"ports": [{"port": 4180, "protocol": "TCP"}]}]


def test_the_portal_runs_the_runway_image_and_the_pinned_proxy() -> None:
    ui, proxy = containers(build("ui")).values()
    (webhook,) = [o for o in build("base") if o["kind"] == "Deployment"]
    (runway,) = webhook["spec"]["template"]["spec"]["containers"]
    pin = bundled_versions().as_env()["OAUTH2_PROXY_VERSION"]
    values = yaml.safe_load((ROOT / "charts" / "runway" / "values.yaml").read_text())

    assert (ui["image"], ui["imagePullPolicy"]) == (runway["image"], runway["imagePullPolicy"])
    assert proxy["image"] == f"quay.io/oauth2-proxy/oauth2-proxy:{pin}"
    assert values["ui"]["oauth2Proxy"]["image"] == {
        "repository": "quay.io/oauth2-proxy/oauth2-proxy",
        "tag": pin,
    }
