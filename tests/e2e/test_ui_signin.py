"""The portal's sign-in against the real API server (RBAC on): the forwarded bearer token is
checked with a TokenReview, pages act with the user's token only, and a SelfSubjectAccessReview
answers for exactly that user. Users are ServiceAccounts with TokenRequest tokens."""

from __future__ import annotations

import json

import kubernetes
import pytest
from flask import Flask

from tests.support.cluster import Cluster
from tests.support.users import grant, make_user
from ui.app import create_app
from ui.cluster import Cluster as UiCluster
from ui.settings import Mode, UiSettings


def live_app(cluster: Cluster) -> Flask:
    settings = UiSettings(mode=Mode.LIVE, kubeconfig=str(cluster.kubeconfig), secret_key=b"k" * 32)
    return create_app(settings)


def said(page: str) -> str:
    start = page.find('role="alert">')
    return page[start + len('role="alert">') : page.find("</p>", start)]


def test_no_token_and_a_wrong_token_are_refused(cluster: Cluster) -> None:
    client = live_app(cluster).test_client()
    none = client.get("/about")
    wrong = client.get("/about", headers={"Authorization": "Bearer not-a-token"})
    assert (none.status_code, said(none.get_data(as_text=True))) == (
        401,
        "no bearer token came with the request: open the portal through its sign-in proxy, "
        "which forwards your token",
    )
    assert (wrong.status_code, said(wrong.get_data(as_text=True))) == (
        401,
        "the API server does not accept your token (expired, or not for it)",
    )
    assert client.get("/healthz").status_code == 200  # health needs no sign-in


@pytest.mark.parametrize("header", ["X-Forwarded-Access-Token", "Authorization"])
def test_the_forwarded_token_signs_the_user_in(
    cluster: Cluster, namespace: str, header: str
) -> None:
    user = make_user(cluster, namespace, "alice")
    value = user.token if header != "Authorization" else f"Bearer {user.token}"
    page = live_app(cluster).test_client().get("/about", headers={header: value})
    assert page.status_code == 200
    assert f"Signed in as <strong>{user.username}</strong>" in page.get_data(as_text=True)


def test_a_user_client_has_the_users_rights_only(cluster: Cluster, namespace: str) -> None:
    """The portal's own client is the admin here; the user's carries only the user's token."""
    alice = make_user(cluster, namespace, "alice")
    bob = make_user(cluster, namespace, "bob")
    grant(
        cluster,
        alice,
        namespace,
        verbs=["create", "list"],
        resources=["modeldeployments"],
        group="airunway.ai",
        role="md-writer",
    )
    portal = UiCluster(
        lambda: kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
    )
    alice_viewer = portal.viewer(alice.token)
    bob_viewer = portal.viewer(bob.token)
    assert alice_viewer is not None and bob_viewer is not None
    assert (alice_viewer.username, bob_viewer.username) == (alice.username, bob.username)
    mds = {"resource": "modeldeployments", "group": "airunway.ai", "namespace": namespace}
    assert portal.may(alice_viewer, "create", **mds).allowed is True
    assert portal.may(bob_viewer, "create", **mds).allowed is False
    assert portal.may(alice_viewer, "delete", **mds).allowed is False
    as_bob = kubernetes.client.CoreV1Api(portal.as_user(bob_viewer))
    with pytest.raises(kubernetes.client.ApiException) as refused:
        as_bob.list_namespaced_secret(namespace)
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}")["message"] == (
        f'secrets is forbidden: User "{bob.username}" cannot list resource "secrets" '
        f'in API group "" in the namespace "{namespace}"'
    )
