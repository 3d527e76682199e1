"""The Deployments page (ui/pages/deployments.py) against the real API server (RBAC on): what a
user may read, read with their own token, shown whole; what they may not, the API server's own
refusal. Users are ServiceAccounts with TokenRequest tokens (tests/support/users.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import yaml
from markupsafe import escape

from tests.support.cluster import Cluster
from tests.support.e2e import cluster, namespace  # noqa: F401  (the real API server)
from tests.support.paths import EXAMPLES
from tests.support.ui import flat, live_app, model, signed_in
from tests.support.users import READS, User, grant_all, make_user
from ui.app import create_app
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
STAMP = "2026-12-07T07:00:00Z"


def reader(kube: Cluster, ns: str, name: str = "reader") -> User:
    user = make_user(kube, ns, name)
    grant_all(kube, user, ns, f"{name}-reads", ["get", "list", "watch"], READS)
    return user


def running_status() -> dict[str, Any]:
    return {
        "phase": "Running",
        "message": "1/1 replicas ready",
        "observedGeneration": 1,
        "provider": {"name": "vllm", "selectedReason": "provider explicitly specified in spec"},
        "engine": {"type": "vllm", "selectedReason": "engine explicitly specified in spec"},
        "replicas": {"desired": 1, "ready": 1, "available": 1},
        "endpoint": {"service": "phi-direct", "port": 8000},
        "gateway": {"endpoint": "https://gateway.example", "modelName": "phi"},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Serving",
                "message": "1/1 replicas ready",
                "lastTransitionTime": STAMP,
                "observedGeneration": 1,
            },
            {
                "type": "ResourceCreated",
                "status": "True",
                "reason": "ResourceCreated",
                "message": "the upstream objects exist",
                "lastTransitionTime": STAMP,
                "observedGeneration": 1,
            },
        ],
    }


def with_status(kube: Cluster, ns: str, name: str, status: dict[str, Any]) -> None:
    kube.apply_manifests(yaml.safe_dump(model(ns, name)))
    with kube.api_client() as api:
        kubernetes.client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "airunway.ai", "v1alpha1", ns, "modeldeployments", name, {"status": status}
        )


def upstream(kube: Cluster, ns: str) -> None:
    """A Deployment as the renderer writes it (labels, rendered-from), a pending pod of it and
    the scheduler's event about that pod (no scheduler runs on this kube: the test writes
    what it would)."""
    labels = {
        "airunway.ai/model-deployment": "phi-direct",
        "app.kubernetes.io/managed-by": "runway",
    }
    meta = {"namespace": ns, "labels": labels}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta
        | {
            "name": "phi-direct",
            "annotations": {"airunway.ai/rendered-from": f"ModelDeployment/{ns}/phi-direct"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.33.0"}]},
            },
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta | {"name": "phi-direct-0"},
        "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.33.0"}]},
    }
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "phi-direct-0.1", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": "phi-direct-0", "namespace": ns},
        "type": "Warning",
        "reason": "FailedScheduling",
        "message": "0/5 nodes are available: 5 Insufficient nvidia.com/gpu.",
        "count": 3,
        "firstTimestamp": STAMP,
        "lastTimestamp": STAMP,
        "source": {"component": "default-scheduler"},
    }
    kube.kubectl("create", "serviceaccount", "default", "-n", ns)  # no controller makes it
    kube.apply_manifests(yaml.safe_dump_all([deployment, pod, event]))


def test_the_list_shows_what_the_user_may_read_and_filters_it(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    with_status(cluster, namespace, "phi-direct", running_status())
    cluster.apply_manifests(yaml.safe_dump(model(namespace, "zeta")))  # no status yet
    client = signed_in(live_app(cluster), reader(cluster, namespace))
    listed = client.get(f"/deployments/list?namespace={namespace}")
    poll = f'hx-get="/deployments/list?namespace={namespace}&amp;phase=&amp;provider="'
    head = (
        f'<section id="deployments-list" class="deployments" aria-labelledby="deployments-list-title" '
        f'{poll} hx-trigger="every 3s" hx-swap="outerHTML">'
        f'<h2 id="deployments-list-title">ModelDeployments in {namespace}</h2>'
    )
    table_head = (
        '<table><thead><tr><th scope="col">Namespace</th><th scope="col">Name</th>'
        '<th scope="col">Phase</th><th scope="col">Provider</th><th scope="col">Engine</th>'
        '<th scope="col">Replicas ready</th><th scope="col">Ready</th><th scope="col">Message</th>'
        "</tr></thead><tbody>"
    )
    phi = (
        f'<tr><td>{namespace}</td><td><a href="/deployments/{namespace}/phi-direct">phi-direct</a></td>'
        '<td><span class="badge phase-running">Running</span></td><td>vllm</td><td>vllm</td>'
        "<td>1/1</td><td>True (Serving)</td><td>1/1 replicas ready</td></tr>"
    )
    zeta = (
        f'<tr><td>{namespace}</td><td><a href="/deployments/{namespace}/zeta">zeta</a></td>'
        '<td><span class="badge phase-">no status yet</span></td><td>vllm</td><td>vllm</td>'
        "<td></td><td></td><td></td></tr>"
    )
    assert listed.status_code == 200
    assert flat(listed.get_data(as_text=True)) == (
        head + table_head + phi + zeta + "</tbody></table></section>"
    )
    running = client.get(f"/deployments/list?namespace={namespace}&phase=Running&provider=vllm")
    assert flat(running.get_data(as_text=True)) == (
        head.replace("phase=&amp;provider=", "phase=Running&amp;provider=vllm")
        + table_head
        + phi
        + "</tbody></table></section>"
    )
    failed = client.get(f"/deployments/list?namespace={namespace}&phase=Failed")
    assert flat(failed.get_data(as_text=True)) == (
        head.replace("phase=&amp;", "phase=Failed&amp;").replace("</h2>", "</h2>")
        + "<p>No ModelDeployment matches the filters.</p></section>"
    )


def test_a_user_who_may_not_list_sees_the_api_servers_refusal(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    with_status(cluster, namespace, "phi-direct", running_status())
    stranger = make_user(cluster, namespace, "stranger")
    client = signed_in(live_app(cluster), stranger)
    here = client.get(f"/deployments/list?namespace={namespace}")
    everywhere = client.get("/deployments/list")
    refused = (
        f'modeldeployments.airunway.ai is forbidden: User "{stranger.username}" cannot list '
        'resource "modeldeployments" in API group "airunway.ai"'
    )

    def alert(message: str) -> str:
        return f'<p class="error" role="alert">The API server refused: {escape(message)}</p>'

    assert flat(here.get_data(as_text=True)).split("</h2>", 1)[1] == (
        alert(f'{refused} in the namespace "{namespace}"') + "</section>"
    )
    assert flat(everywhere.get_data(as_text=True)).split("</h2>", 1)[1] == (
        alert(f"{refused} at the cluster scope") + "</section>"
    )
    detail = client.get(f"/deployments/{namespace}/phi-direct/fragment")
    assert flat(detail.get_data(as_text=True)) == (
        f'<div id="deployment-detail" hx-get="/deployments/{namespace}/phi-direct/fragment" '
        'hx-trigger="every 3s" hx-swap="outerHTML"><p class="error" role="alert">'
        "The API server refused: modeldeployments.airunway.ai &#34;phi-direct&#34; is forbidden: "
        f"User &#34;{stranger.username}&#34; cannot get resource &#34;modeldeployments&#34; in "
        f"API group &#34;airunway.ai&#34; in the namespace &#34;{namespace}&#34;</p></div>"
    )


def test_the_detail_shows_status_conditions_upstream_pending_pods_and_origin(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    with_status(cluster, namespace, "phi-direct", running_status())
    upstream(cluster, namespace)
    client = signed_in(live_app(cluster), reader(cluster, namespace))
    answer = client.get(f"/deployments/{namespace}/phi-direct/fragment")
    assert answer.status_code == 200
    got = flat(answer.get_data(as_text=True))
    call = (
        "curl -s https://gateway.example/v1/chat/completions -H &#39;Content-Type: "
        "application/json&#39; -d &#39;{&#34;model&#34;: &#34;phi&#34;, &#34;messages&#34;: "
        "[{&#34;role&#34;: &#34;user&#34;, &#34;content&#34;: &#34;Hello&#34;}]}&#39;"
    )
    expected = (
        f'<div id="deployment-detail" hx-get="/deployments/{namespace}/phi-direct/fragment" '
        'hx-trigger="every 3s" hx-swap="outerHTML">'
        '<section class="panel" aria-labelledby="d-status"><h2 id="d-status">Status</h2><table>'
        '<tr><th scope="row">Phase</th><td><span class="badge phase-running">Running</span></td></tr>'
        '<tr><th scope="row">Message</th><td>1/1 replicas ready</td></tr>'
        '<tr><th scope="row">Provider</th><td>vllm</td></tr>'
        '<tr><th scope="row">Engine</th><td>vllm</td></tr>'
        '<tr><th scope="row">Replicas</th><td>1 ready, 1 available, 1 desired</td></tr>'
        '<tr><th scope="row">Endpoint</th><td>Service <code>phi-direct</code> port <code>8000</code></td></tr>'
        '<tr><th scope="row">Gateway endpoint</th><td><code>https://gateway.example</code></td></tr>'
        '<tr><th scope="row">Model name to send</th><td><code>phi</code></td></tr>'
        '<tr><th scope="row">Observed generation</th><td>1 (generation 1)</td></tr></table>'
        f'<p>Call it through the gateway:</p><pre class="copy">{call}</pre></section>'
        '<section class="panel" aria-labelledby="d-conditions"><h2 id="d-conditions">Conditions</h2>'
        '<table><thead><tr><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Reason</th>'
        '<th scope="col">Message</th><th scope="col">Since</th></tr></thead><tbody>'
        f'<tr><td>Ready</td><td class="ok">True</td><td>Serving</td><td>1/1 replicas ready</td><td>{STAMP}</td></tr>'
        '<tr><td>ResourceCreated</td><td class="ok">True</td><td>ResourceCreated</td>'
        f"<td>the upstream objects exist</td><td>{STAMP}</td></tr></tbody></table></section>"
        '<section class="panel" aria-labelledby="d-upstream"><h2 id="d-upstream">Upstream objects</h2>'
        '<table><thead><tr><th scope="col">Kind</th><th scope="col">Name</th>'
        '<th scope="col">Its own status</th><th scope="col">Its conditions</th></tr></thead><tbody>'
        "<tr><td>Deployment</td><td>phi-direct</td><td>0/1 replicas ready</td><td></td></tr>"
        "</tbody></table></section>"
        '<section class="panel" aria-labelledby="d-pending"><h2 id="d-pending">Pending pods</h2>'
        "<h3>phi-direct-0</h3>"
        '<table><thead><tr><th scope="col">Type</th><th scope="col">Reason</th>'
        '<th scope="col">Message</th><th scope="col">Count</th></tr></thead><tbody>'
        "<tr><td>Warning</td><td>FailedScheduling</td>"
        "<td>0/5 nodes are available: 5 Insufficient nvidia.com/gpu.</td><td>3</td></tr>"
        "</tbody></table></section>"
        '<section class="panel" aria-labelledby="d-origin"><h2 id="d-origin">Where it came from</h2>'
        "<ul><li>Rendered by Runway: its upstream objects say <code>airunway.ai/rendered-from: "
        f"ModelDeployment/{namespace}/phi-direct</code> (the renderer stamps no commit).</li>"
        "<li>No GitOps engine's mark: applied directly (runway apply, kubectl or the portal), "
        "so no commit is known.</li></ul></section></div>"
    )
    assert got == expected


def test_offline_there_is_no_deployments_page(tmp_path: Path) -> None:
    app = create_app(UiSettings(mode=Mode.OFFLINE, sources=(str(EXAMPLES),), secret_key=KEY))
    answer = app.test_client().get("/deployments")
    body = flat(answer.get_data(as_text=True))
    assert answer.status_code == 404
    assert body[body.index("<h1>") :] == (
        '<h1>Error 404</h1><p class="error" role="alert">Deployments needs a cluster: run '
        "`runway ui` without --offline</p></main></body></html>"
    )


def test_the_commit_is_the_one_flux_last_applied_from_the_kustomization_that_owns_it(
    cluster: Cluster,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    revision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
    labelled = model(namespace) | {
        "metadata": {
            "name": "phi-direct",
            "namespace": namespace,
            "labels": {
                "kustomize.toolkit.fluxcd.io/name": "models",
                "kustomize.toolkit.fluxcd.io/namespace": namespace,
            },
        }
    }
    kustomization = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "models", "namespace": namespace},
        "spec": {
            "interval": "1m",
            "prune": True,
            "path": "./rendered",
            "sourceRef": {"kind": "GitRepository", "name": "gitops"},
        },
    }
    cluster.apply_manifests(yaml.safe_dump_all([labelled, kustomization]))
    with cluster.api_client() as api:
        kubernetes.client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "kustomize.toolkit.fluxcd.io",
            "v1",
            namespace,
            "kustomizations",
            "models",
            {"status": {"lastAppliedRevision": revision}},
        )
    user = reader(cluster, namespace)
    client = signed_in(live_app(cluster), user)
    without = flat(
        client.get(f"/deployments/{namespace}/phi-direct/fragment").get_data(as_text=True)
    )
    grant_all(
        cluster,
        user,
        namespace,
        "flux-reads",
        ["get"],
        ["kustomizations.kustomize.toolkit.fluxcd.io"],
    )
    found = flat(client.get(f"/deployments/{namespace}/phi-direct/fragment").get_data(as_text=True))
    origin = '<section class="panel" aria-labelledby="d-origin">'
    not_rendered = (
        "<li>Not rendered by Runway&#39;s renderer (no upstream object carries "
        "<code>airunway.ai/rendered-from</code>).</li>"
    ).replace("&#39;", "'")
    refused = escape(
        f'kustomizations.kustomize.toolkit.fluxcd.io "models" is forbidden: User '
        f'"{user.username}" cannot get resource "kustomizations" in API group '
        f'"kustomize.toolkit.fluxcd.io" in the namespace "{namespace}"'
    )
    assert without[without.index(origin) :] == (
        f'{origin}<h2 id="d-origin">Where it came from</h2><ul>{not_rendered}'
        f"<li>Applied by Flux Kustomization <code>{namespace}/models</code>: "
        f'<span class="error">{refused}</span></li></ul></section></div>'
    )
    assert found[found.index(origin) :] == (
        f'{origin}<h2 id="d-origin">Where it came from</h2><ul>{not_rendered}'
        f"<li>Applied by Flux Kustomization <code>{namespace}/models</code> at commit "
        f"<code>{revision}</code></li></ul></section></div>"
    )
