"""The Deployments page and apply-as-user in a real browser on the live plane (API server,
kube-controller-manager, kube-scheduler, KWOK's fake GPU nodes, and Runway's status controller
in this process: tests/support/live.py, tests/support/status.py), against `runway ui` run as the
site runs it (`--actions --apply-as-user`). The bearer token goes in each request's
X-Forwarded-Access-Token header, as the sign-in proxy sends it.

A user with rights composes a model (the Direct vLLM example, pasted as YAML), applies it as
themselves and watches it reach Running on the Deployments page; a user without rights is not
offered Apply and sees the API server's refusal naming them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page, expect

from tests.support.browser import Screenshot, check_accessible
from tests.support.cluster import Cluster
from tests.support.e2e import live_cluster  # noqa: F401  (the live plane)
from tests.support.paths import EXAMPLES
from tests.support.serving import provide_claim
from tests.support.status import InProcess
from tests.support.ui import UiServer
from tests.support.users import READS, User, grant_all, make_user

RUNNING_TIMEOUT_MS = 180_000  # the rollout on KWOK and the status controller's write
WRITES = ("modeldeployments.airunway.ai", "deployments.apps", "services")


class Plane:
    def __init__(self, cluster: Cluster, namespace: str, server: UiServer) -> None:
        self.cluster, self.namespace, self.server = cluster, namespace, server


@pytest.fixture(scope="module")
def plane(
    live_cluster: Cluster,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Plane]:
    ns = f"ui-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", ns)
    volume = provide_claim(live_cluster, ns, "shared-model-cache")
    api = live_cluster.api_client()
    controller = InProcess(api, ns)
    controller.start()
    args = ["--kubeconfig", str(live_cluster.kubeconfig), "--actions", "--apply-as-user"]
    try:
        with UiServer.start(tmp_path_factory.mktemp("ui"), offline=False, args=args) as server:
            yield Plane(live_cluster, ns, server)
    finally:
        controller.stop()
        api.close()
        live_cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        live_cluster.kubectl("delete", "persistentvolume", volume, check=False)


def manifest(ns: str) -> str:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "vllm-direct-explicit.yaml").read_text())
    doc["metadata"]["namespace"] = ns
    return yaml.safe_dump(doc, sort_keys=False)


def user(plane: Plane, name: str, *, writes: bool) -> User:
    made = make_user(plane.cluster, plane.namespace, name)
    grant_all(
        plane.cluster, made, plane.namespace, f"{name}-reads", ["get", "list", "watch"], READS
    )
    if writes:
        grant_all(
            plane.cluster, made, plane.namespace, f"{name}-writes", ["create", "patch"], WRITES
        )
    return made


def signed_in(page: Page, who: User) -> None:
    page.set_extra_http_headers({"X-Forwarded-Access-Token": who.token})


def compose(page: Page, plane: Plane) -> None:
    page.goto(f"{plane.server.url}/deployments?namespace={plane.namespace}")
    page.locator("#manifest").fill(manifest(plane.namespace))


def test_a_user_with_rights_applies_as_themselves_and_watches_it_reach_running(
    page: Page, plane: Plane, screenshot: Screenshot, measure: Any
) -> None:
    alice = user(plane, "alice", writes=True)
    signed_in(page, alice)
    compose(page, plane)
    apply = page.get_by_role("button", name=f"Apply as {alice.username}")
    expect(apply).to_be_visible()
    started = time.monotonic()
    apply.click()
    expect(page.locator("#outputs-result p").first).to_have_text(
        f"Applied ModelDeployment {plane.namespace}/phi-direct as {alice.username}. "
        "Watch it on Deployments"
    )
    expect(page.locator("#outputs-result tbody tr")).to_have_text(
        [f"{kind}/phi-directapplied" for kind in ("ModelDeployment", "Deployment", "Service")]
    )
    page.goto(f"{plane.server.url}/deployments/{plane.namespace}/phi-direct")
    badge = page.locator("#deployment-detail .badge").first
    expect(badge).to_have_text("Running", timeout=RUNNING_TIMEOUT_MS)  # the page polls every 3s
    measure("apply to Running, seen in the page", f"{time.monotonic() - started:.1f} s")
    expect(page.locator("#deployment-detail")).to_contain_text("1 ready, 1 available, 1 desired")
    expect(page.locator("#d-upstream + table tbody tr")).to_have_count(2)  # Deployment, Service
    check_accessible(page)
    screenshot(page, "deployments-detail")
    page.goto(f"{plane.server.url}/deployments?namespace={plane.namespace}")
    row = page.locator("#deployments-list tbody tr").filter(has_text="phi-direct")
    expect(row.locator(".badge")).to_have_text("Running")
    check_accessible(page)
    screenshot(page, "deployments-list")


def test_a_user_without_rights_is_not_offered_apply_and_sees_the_api_servers_refusal(
    page: Page, plane: Plane
) -> None:
    bob = user(plane, "bob", writes=False)
    signed_in(page, bob)
    compose(page, plane)
    refusal = page.locator("#outputs-offer .refusal")
    expect(refusal).to_be_visible()
    expect(page.get_by_role("button", name=f"Apply as {bob.username}")).to_have_count(0)
    ns = plane.namespace
    expect(refusal.locator("li")).to_have_text(
        [
            f'modeldeployments.airunway.ai "phi-direct" is forbidden: User "{bob.username}" '
            f'cannot patch resource "modeldeployments" in API group "airunway.ai" in the '
            f'namespace "{ns}"',
            f'deployments.apps "phi-direct" is forbidden: User "{bob.username}" cannot patch '
            f'resource "deployments" in API group "apps" in the namespace "{ns}"',
            f'services "phi-direct" is forbidden: User "{bob.username}" cannot patch resource '
            f'"services" in API group "" in the namespace "{ns}"',
        ]
    )
    check_accessible(page)


def test_a_user_who_may_not_list_sees_the_refusal_not_an_empty_list(
    page: Page, plane: Plane, tmp_path: Path
) -> None:
    carol = make_user(plane.cluster, plane.namespace, "carol")
    signed_in(page, carol)
    page.goto(f"{plane.server.url}/deployments?namespace={plane.namespace}")
    expect(page.locator("#deployments-list [role=alert]")).to_have_text(
        f"The API server refused: modeldeployments.airunway.ai is forbidden: User "
        f'"{carol.username}" cannot list resource "modeldeployments" in API group '
        f'"airunway.ai" in the namespace "{plane.namespace}"'
    )
    check_accessible(page)
