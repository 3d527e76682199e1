"""kustomize/ui, the portal's deployment: it reads only what the pages show, asks the API server
who a token is and what its user may do, reads no Secret, and impersonates only with the
apply-as-user Component (kustomize/ui/apply-as-user) on. The portal listens on the pod's
loopback: the oauth2-proxy sidecar is the only way in."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kubeio.shipped import bundled_versions
from tests.conftest import ROOT
from tests.support.kustomize import KUBECTL, build

UI = ROOT / "kustomize" / "ui"
READ = ["get", "list", "watch"]
UI_RULES = [
    {
        "apiGroups": ["airunway.ai"],
        "resources": ["modeldeployments", "inferenceproviderconfigs"],
        "verbs": READ,
    },
    {
        "apiGroups": ["airunway.ai"],
        "resources": ["modeldeployments/status", "inferenceproviderconfigs/status"],
        "verbs": ["get"],
    },
    {
        "apiGroups": ["gateway.tokenfactory.mirantis.com"],
        "resources": ["externalmodelproviders"],
        "verbs": READ,
    },
    {
        "apiGroups": ["gateway.tokenfactory.mirantis.com"],
        "resources": ["externalmodelproviders/status"],
        "verbs": ["get"],
    },
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": READ},
    {"apiGroups": ["nvidia.com"], "resources": ["dynamographdeployments"], "verbs": READ},
    {"apiGroups": ["kaito.sh"], "resources": ["workspaces"], "verbs": READ},
    {"apiGroups": ["ray.io"], "resources": ["rayservices"], "verbs": READ},
    {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"], "verbs": READ},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "verbs": READ},
    {"apiGroups": [""], "resources": ["events", "pods", "nodes"], "verbs": READ},
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": READ,
    },
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
]
IMPERSONATE_RULES = [
    {
        "apiGroups": [""],
        "resources": ["users", "groups", "serviceaccounts"],
        "verbs": ["impersonate"],
    },
    {"apiGroups": ["authentication.k8s.io"], "resources": ["uids"], "verbs": ["impersonate"]},
]
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


def with_apply_as_user(directory: Path) -> list[dict[str, Any]]:
    """What a site's overlay of kustomize/ui with the apply-as-user Component builds (kustomize
    takes only relative paths to other kustomizations)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(UI, directory)
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "components": [f"{base}/apply-as-user"],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    done = subprocess.run(
        [str(KUBECTL), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


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


def test_the_ui_role_reads_what_the_pages_show_and_asks_for_reviews_only() -> None:
    objects = build("ui")
    binding = one(objects, "ClusterRoleBinding", "runway-ui")

    assert one(objects, "ClusterRole", "runway-ui")["rules"] == UI_RULES
    assert (binding["roleRef"]["name"], binding["subjects"]) == (
        "runway-ui",
        [{"kind": "ServiceAccount", "name": "runway-ui", "namespace": "runway-system"}],
    )


def test_the_ui_reads_every_upstream_kind_the_status_controller_reads() -> None:
    """The Deployments page shows each upstream object's own status, as the controller reads it."""
    (controller,) = [
        o
        for o in build("status")
        if (o["kind"], o["metadata"]["name"]) == ("ClusterRole", "runway-status-controller")
    ]
    upstream = {
        (group, resource)
        for rule in controller["rules"]
        if rule["verbs"] == READ
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    read = {
        (group, resource)
        for rule in UI_RULES
        if rule["verbs"] == READ
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }

    assert sorted(upstream - read) == []


def rules_by_role(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {
        o["metadata"]["name"]: o["rules"] for o in objects if o["kind"] in ("Role", "ClusterRole")
    }


def test_no_rule_grants_secrets_wildcards_or_escalation(tmp_path: Path) -> None:
    for objects in (build("ui"), with_apply_as_user(tmp_path / "overlay")):
        rules = [r for role in rules_by_role(objects).values() for r in role]
        granted = {
            (field, value)
            for r in rules
            for field in ("apiGroups", "resources", "verbs")
            for value in r[field]
        }

        assert [r for r in rules if "resourceNames" in r or "nonResourceURLs" in r] == []
        assert (
            sorted(
                (f, v)
                for f, v in granted
                if v == "*"
                or "*" in v
                or v in ("secrets", "escalate", "bind", "delete", "update", "patch")
            )
            == []
        )


def test_impersonation_is_only_in_the_apply_as_user_component(tmp_path: Path) -> None:
    plain = build("ui")
    overlay = with_apply_as_user(tmp_path / "overlay")
    roles = rules_by_role(overlay)
    impersonating = sorted(
        name for name, rules in roles.items() if any("impersonate" in r["verbs"] for r in rules)
    )
    binding = one(overlay, "ClusterRoleBinding", "runway-ui-impersonate")

    assert [
        r for role in rules_by_role(plain).values() for r in role if "impersonate" in r["verbs"]
    ] == []
    assert names(overlay) == sorted(
        [
            *names(plain),
            "ClusterRole/runway-ui-impersonate",
            "ClusterRoleBinding/runway-ui-impersonate",
        ]
    )
    assert impersonating == ["runway-ui-impersonate"]
    assert roles["runway-ui-impersonate"] == IMPERSONATE_RULES
    assert (binding["roleRef"]["name"], binding["subjects"]) == (
        "runway-ui-impersonate",
        [{"kind": "ServiceAccount", "name": "runway-ui", "namespace": "runway-system"}],
    )
    assert containers(overlay)["ui"]["args"] == [*UI_ARGS, "--actions", "--apply-as-user"]
    assert containers(plain)["ui"]["args"] == UI_ARGS
    # everything else the Component leaves as it is
    for obj in plain:
        if obj["kind"] != "Deployment":
            assert one(overlay, obj["kind"], obj["metadata"]["name"]) == obj


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
