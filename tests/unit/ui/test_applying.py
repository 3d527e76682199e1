"""Apply as the signed-in user (ui/applying.py through POST /outputs/offer and /outputs/apply)
against the real API server (RBAC on): a user with rights is offered the button and applies
with their own token (field manager runway-ui); a user without is not offered it and is shown
the API server's own refusal naming them, and a direct POST is refused the same way."""

from __future__ import annotations

from typing import Any

import kubernetes
import yaml
from markupsafe import escape

from tests.support.cluster import Cluster
from tests.support.e2e import cluster, namespace  # noqa: F401  (the real API server)
from tests.support.ui import WRITES, live_app, model, posted, signed_in
from tests.support.users import User, grant_all, make_user
from ui.app import create_app
from ui.settings import Mode, UiSettings

KEY = b"k" * 32


def form(ns: str) -> dict[str, str]:
    return {"outputs_source": "manifest", "manifest": yaml.safe_dump(model(ns))}


def buttons(ns: str, apply_as: str | None) -> str:
    apply = (
        '<button type="button" hx-post="/outputs/apply" hx-include="closest form" '
        f'hx-target="#outputs-result" hx-disabled-elt="this">Apply as {apply_as}</button>'
        if apply_as
        else ""
    )
    return (
        f"<p>ModelDeployment {ns}/phi-direct: {ns}/phi-direct.yaml</p>"
        '<div class="output-buttons"><button type="submit" class="secondary" '
        'formaction="/outputs/download" formmethod="post">Download YAML</button>'
        '<button type="button" class="secondary" hx-post="/outputs/patch" '
        'hx-include="closest form" hx-target="#outputs-result">Show patch</button>'
        f"{apply}</div>"
    )


def test_a_user_with_rights_is_offered_apply_and_applies_as_themselves(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    deployer = make_user(cluster, namespace, "deployer")
    grant_all(cluster, deployer, namespace, "deployer-writes", ["get", "create", "patch"], WRITES)
    client = signed_in(live_app(cluster, actions=True, apply_as_user=True), deployer)
    assert posted(client, "/outputs/offer", form(namespace)) == buttons(
        namespace, deployer.username
    )
    applied = posted(client, "/outputs/apply", form(namespace))
    rows = "".join(
        f'<tr><td>{kind}/phi-direct</td><td class="ok">applied</td></tr>'
        for kind in ("ModelDeployment", "Deployment", "Service")
    )
    assert applied == (
        f'<p class="ok" role="status">Applied ModelDeployment {namespace}/phi-direct as '
        f'{deployer.username}. <a href="/deployments">Watch it on Deployments</a></p>'
        '<table><thead><tr><th scope="col">Object</th><th scope="col">Result</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    with cluster.api_client() as api:
        stored: Any = kubernetes.client.CustomObjectsApi(api).get_namespaced_custom_object(
            "airunway.ai", "v1alpha1", namespace, "modeldeployments", "phi-direct"
        )
        deployment: Any = kubernetes.client.AppsV1Api(api).read_namespaced_deployment(
            "phi-direct", namespace
        )
    managers = {f["manager"] for f in stored["metadata"]["managedFields"]}
    assert managers == {"runway-ui"}
    assert {f.manager for f in deployment.metadata.managed_fields} == {"runway-ui"}
    assert stored["spec"]["model"]["id"] == "microsoft/Phi-4-mini-instruct"


def refusal(user: User, ns: str, resource: str, group: str, name: str = "phi-direct") -> str:
    qualified = f"{resource}.{group}" if group else resource
    in_group = f' in API group "{group}"' if group else ' in API group ""'
    return (
        f'{qualified} "{name}" is forbidden: User "{user.username}" cannot patch resource '
        f'"{resource}"{in_group} in the namespace "{ns}"'
    )


def test_a_user_without_rights_is_not_offered_apply_and_is_refused_by_the_api_server(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    reader = make_user(cluster, namespace, "onlooker")
    grant_all(cluster, reader, namespace, "onlooker-reads", ["get", "list"], WRITES)
    client = signed_in(live_app(cluster, actions=True, apply_as_user=True), reader)
    refused = [
        refusal(reader, namespace, "modeldeployments", "airunway.ai"),
        refusal(reader, namespace, "deployments", "apps"),
        refusal(reader, namespace, "services", ""),
    ]
    items = "".join(f'<li class="error">{escape(message)}</li>' for message in refused)
    assert posted(client, "/outputs/offer", form(namespace)) == (
        buttons(namespace, None)
        + f'<div class="refusal" role="status"><p>Apply is not offered to {reader.username}:</p>'
        f"<ul>{items}</ul></div>"
    )
    applied = posted(client, "/outputs/apply", form(namespace))
    rows = "".join(
        f'<tr><td>{kind}/phi-direct</td><td class="error">{escape(message)}</td></tr>'
        for kind, message in zip(("ModelDeployment", "Deployment", "Service"), refused, strict=True)
    )
    assert applied == (
        f'<p class="error" role="alert">The API server refused some of ModelDeployment '
        f"{namespace}/phi-direct:</p>"
        '<table><thead><tr><th scope="col">Object</th><th scope="col">Result</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def test_apply_is_refused_when_the_site_has_not_enabled_it(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    deployer = make_user(cluster, namespace, "deployer")
    client = signed_in(live_app(cluster, actions=True), deployer)
    assert posted(client, "/outputs/offer", form(namespace)) == buttons(namespace, None)
    assert posted(client, "/outputs/apply", form(namespace)) == (
        '<p class="error" role="alert">the site has not enabled applying as the signed-in user '
        "(--actions --apply-as-user)</p>"
    )


def test_offline_a_manifest_is_offered_download_and_patch_only() -> None:
    app = create_app(UiSettings(mode=Mode.OFFLINE, sources=("examples",), secret_key=KEY))
    got = posted(app.test_client(), "/outputs/offer", form("team-a"))
    assert got == buttons("team-a", None).replace(
        "team-a/phi-direct.yaml</p>", "examples/team-a/phi-direct.yaml</p>"
    )
