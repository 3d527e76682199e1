"""The Providers and Gateway providers pages on the real API server (RBAC on), in the browser,
signed in as the sign-in proxy would (a ServiceAccount's TokenRequest token in
X-Forwarded-Access-Token):

- a config whose status says ready while its upstream operator is not (its CRD is installed, no
  Ready operator pod matches) is shown with the two readinesses apart;
- an ExternalModelProvider composed by a signed-in user is stamped with that user's name, and
  the providers listed are those the user may read (a user without the right is told so)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from playwright.sync_api import Page, expect

from core.admission.configs import REQUESTED_BY
from core.model.kinds import EMP_GROUP, GROUP, VERSION
from kubeio.yamlio import dump
from tests.support.browser import Screenshot, check_accessible
from tests.support.cluster import Cluster
from tests.support.e2e import cluster, namespace  # noqa: F401  (the e2e tier's fixtures)
from tests.support.ui import UiServer
from tests.support.users import User, make_user

TOKEN_HEADER = "X-Forwarded-Access-Token"


@pytest.fixture
def live_ui(cluster: Cluster, tmp_path: Path) -> Iterator[UiServer]:  # noqa: F811
    """`runway ui` in live mode, its own client the cluster's admin kubeconfig."""
    with UiServer.start(
        tmp_path, offline=False, args=["--kubeconfig", str(cluster.kubeconfig)]
    ) as server:
        yield server


def config(name: str, pods_in: str) -> dict[str, Any]:
    health = {
        "crds": [{"name": "workspaces.kaito.sh", "version": "v1beta1"}],
        "operatorPods": [{"namespace": pods_in, "selectors": [f"app={name}-operator"]}],
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceProviderConfig",
        "metadata": {"name": name, "annotations": {"airunway.ai/health": json.dumps(health)}},
        "spec": {
            "capabilities": {
                "engines": [
                    {
                        "name": "vllm",
                        "servingModes": ["aggregated"],
                        "gpuSupport": True,
                        "cpuSupport": False,
                    }
                ]
            },
            "selectionRules": [{"condition": "spec.engine.type == 'vllm'", "priority": 1}],
        },
    }


READY_STATUS = {
    "ready": True,
    "version": "test",
    "lastHeartbeat": "2026-12-07T07:00:00Z",
    "upstreamCRDVersion": "kaito.sh/v1beta1",
    "conditions": [
        {
            "type": "UpstreamReady",
            "status": "True",
            "reason": "UpstreamReady",
            "message": "every CRD and operator pod it needs is there",
            "lastTransitionTime": "2026-12-07T06:00:00Z",
        }
    ],
}


def sign_in(page: Page, user: User) -> None:
    page.set_extra_http_headers({TOKEN_HEADER: user.token})


def test_a_ready_config_whose_operator_is_not_ready_is_shown_apart(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
    live_ui: UiServer,
    page: Page,
    screenshot: Screenshot,
) -> None:
    name = f"ui-{namespace}"
    custom = kubernetes.client.CustomObjectsApi(cluster.api_client())
    plural = "inferenceproviderconfigs"
    created: Any = custom.create_cluster_custom_object(
        GROUP, VERSION, plural, config(name, namespace)
    )
    try:
        custom.replace_cluster_custom_object_status(
            GROUP, VERSION, plural, name, {**created, "status": READY_STATUS}
        )
        sign_in(page, make_user(cluster, namespace, "viewer"))
        page.goto(f"{live_ui.url}/providers")
        section = page.locator(f"#provider-{name}")
        parts = section.locator(".readiness-part")
        expect(parts.nth(0).locator(".badge").first).to_have_text("Ready")
        expect(parts.nth(0)).to_contain_text("its status says ready")
        expect(parts.nth(1).locator(".badge")).to_have_text("Not ready")
        assert parts.nth(1).locator("p").first.inner_text() == (
            f"Not ready OperatorNotReady: no Ready operator pod in {namespace} matches "
            f"app={name}-operator"
        )
        assert parts.nth(1).locator("table.checks tbody tr").all_inner_texts() == [
            "CRD workspaces.kaito.sh v1beta1\tok\tinstalled, serves v1alpha1, v1beta1",
            f"operator pods in {namespace}\tfailing\tapp={name}-operator: 0 Ready",
        ]
        check_accessible(page)
        section.scroll_into_view_if_needed()
        screenshot(page, "providers-live")
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)


def provider(where: str, name: str, served: str, requested_by: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{EMP_GROUP}/{VERSION}",
        "kind": "ExternalModelProvider",
        "metadata": {
            "name": name,
            "namespace": where,
            "annotations": {REQUESTED_BY: requested_by},
        },
        "spec": {
            "baseURL": "https://api.example.com/v1",
            "credentialsSecretRef": {"name": "example-key", "key": "apiKey"},
            "models": [{"servedName": served}],
        },
    }


def grant_reading(cluster: Cluster, user: User, role: str) -> None:  # noqa: F811
    """What the merge boundary reads as the user, cluster-wide (not InferenceProviderConfigs:
    the portal reads those with its own client)."""
    cluster.kubectl(
        "create",
        "clusterrole",
        role,
        "--verb=get,list",
        f"--resource=modeldeployments.{GROUP},externalmodelproviders.{EMP_GROUP}",
    )
    cluster.kubectl(
        "create",
        "clusterrolebinding",
        role,
        f"--clusterrole={role}",
        f"--serviceaccount={user.namespace}:{user.name}",
    )


def test_a_composed_provider_is_stamped_with_the_signed_in_user(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
    live_ui: UiServer,
    page: Page,
    screenshot: Screenshot,
) -> None:
    alice = make_user(cluster, namespace, "alice")
    role = f"ui-gateway-{namespace}"
    grant_reading(cluster, alice, role)
    existing = provider(namespace, "bobs", f"{namespace}-taken", "bob@example.com")
    cluster.apply_manifests(dump(existing))
    try:
        sign_in(page, alice)
        page.goto(f"{live_ui.url}/gateway")
        row = page.locator("table.emps tbody tr").filter(has_text=f"{namespace}-taken")
        assert row.locator("td").all_inner_texts()[:5] == [
            namespace,
            "bobs",
            "(no status yet)",
            f"{namespace}-taken",
            "bob@example.com",
        ]
        page.get_by_label("Name", exact=True).fill("alices")
        page.get_by_label("Namespace").fill(namespace)
        page.get_by_label("Base URL (OpenAI-compatible API root)").fill(
            "https://api.example.com/v1"
        )
        page.get_by_label("Secret name").fill("example-key")
        page.get_by_label("Served name 1", exact=True).fill(f"{namespace}-mine")
        page.get_by_label("Served name 2", exact=True).fill(f"{namespace}-taken")
        page.get_by_role("button", name="Check", exact=True).click()
        verdict = page.locator("#gateway-verdict")
        expect(verdict.locator("pre.plan")).to_contain_text("CONFLICT")
        assert verdict.locator("p.muted").first.inner_text() == (
            f"Stamped {REQUESTED_BY}: {alice.username} (you, signed in)."
        )
        assert (
            f"    {REQUESTED_BY}: {alice.username}"
            in verdict.locator("pre.object").inner_text().splitlines()
        )
        assert verdict.locator("pre.plan").inner_text().splitlines() == [
            f"model     {namespace}-mine  ExternalModelProvider/{namespace}/alices  -> "
            f"https://api.example.com/v1  requested-by={alice.username}",
            f"CONFLICT  {namespace}-taken  claimed by ExternalModelProvider/{namespace}/alices, "
            f"ExternalModelProvider/{namespace}/bobs; none is registered",
        ]
        check_accessible(page)
        screenshot(page, "gateway-live")
    finally:
        cluster.kubectl("delete", "clusterrolebinding,clusterrole", role, check=False)


def test_a_user_who_may_not_read_providers_is_told_so(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
    live_ui: UiServer,
    page: Page,
) -> None:
    carol = make_user(cluster, namespace, "carol")
    sign_in(page, carol)
    page.goto(f"{live_ui.url}/gateway")
    expect(page.locator("main p[role=alert]:not(#request-error)")).to_have_text(
        "the ModelDeployments and ExternalModelProviders could not be listed as you: "
        "the API server answered 403 Forbidden"
    )
    check_accessible(page)
