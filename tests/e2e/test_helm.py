"""The Helm chart (charts/runway) with the pinned Helm (tests/cluster/helm): it lints, renders what
kustomize builds object for object, puts every value where it belongs, refuses values it does not
know, and installed on a real API server it admits a ModelDeployment through the webhook
configurations, Service, Secret and RBAC it deploys.

What cannot run here, and what stands in: no kubelet or container runtime runs the chart's pod,
so the test runs the pod's own command (the Deployment's args, with only the bind address, the
port and the TLS file paths mapped, and the pod's ServiceAccount token in place of the in-cluster
credentials) as a local process on 127.0.0.1. No kube-proxy or CNI delivers the Service's traffic
to a pod, so the test points the chart's Service at that process (type ExternalName, `localhost`):
the API server still resolves the webhook through the Service, verifies the chart's certificate
for runway-webhook.<namespace>.svc against the chart's caBundle, and calls the chart's paths.
The portal's container (ui.enabled) runs the same way, with its own ServiceAccount's token; its
oauth2-proxy sidecar is not built here, so the test sends a user's token as the proxy forwards it.
`helm test`'s pod (templates/tests/webhook.yaml) runs the same way: KWOK reports it Running, its
own command runs as a local process (`python` is this interpreter, its Secret volume's items are
files here, and a sitecustomize resolves the Service's DNS name to 127.0.0.1 as cluster DNS and
the ExternalName Service would), and the test sets the pod's phase to Succeeded or Failed from
the process's exit status, as a kubelet would; Helm then reports what it reads from the pod.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from tests.support import live
from tests.support.builders import model_deployment
from tests.support.cluster import Cluster, binaries_dir, free_port, terminate
from tests.support.e2e import unavailable
from tests.support.kustomize import build, with_apply_as_user
from tests.support.paths import ROOT
from tests.support.users import make_user
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

CHART = ROOT / "charts" / "runway"
RUNWAY = Path(sys.executable).parent / "runway"
RELEASE, NAMESPACE = "runway", "runway-system"
TIMEOUT = 120
# The differences the chart makes on purpose: `helm uninstall` keeps the CRDs, and the provider
# configs are created once the webhook that validates them runs (post-install hooks).
HELM_ONLY_ANNOTATIONS = {"helm.sh/resource-policy", "helm.sh/hook", "helm.sh/hook-delete-policy"}
CHART_NAME = "runway"
# The standard labels with the release's and the chart's names and versions (and
# app.kubernetes.io/name: runway where an object has no name label of its own).
RELEASE_LABELS = {
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
}
WEBHOOK_NAMES = [
    "mutate.modeldeployments.airunway.ai",
    "validate.modeldeployments.airunway.ai",
    "validate.inferenceproviderconfigs.airunway.ai",
    "validate.externalmodelproviders.gateway.tokenfactory.mirantis.com",
]


@pytest.fixture(scope="module")
def helm() -> Path:
    path = binaries_dir() / "helm"
    if not path.exists():
        unavailable(f"Helm tests: helm not built in {binaries_dir()}; run `make cluster`")
    return path


def run(argv: Sequence[str | Path], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if check:
        assert done.returncode == 0, f"{argv[0]} {argv[1]}: {done.stderr}"
    return done


def template(
    helm: Path, *sets: str, namespace: str = NAMESPACE, flags: Sequence[str] = ()
) -> list[dict[str, Any]]:
    args = [a for s in sets for a in ("--set", s)]
    done = run([helm, "template", RELEASE, CHART, "--namespace", namespace, *flags, *args])
    assert done.stderr == ""
    return [d for d in yaml.safe_load_all(done.stdout) if d]


# kustomize/ui with its apply-as-user Component, as a site's overlay builds it
UI_APPLY_AS_USER = "ui+apply-as-user"


def kustomized(names: Sequence[str], workdir: Path) -> list[dict[str, Any]]:
    return [
        o
        for name in names
        for o in (with_apply_as_user(workdir) if name == UI_APPLY_AS_USER else build(name))
    ]


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _without(meta: dict[str, Any], field: str, names: set[str]) -> None:
    values = meta.get(field, {})
    for name in names:
        values.pop(name, None)
    if field in meta and not values:
        del meta[field]


def without_helm_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without what only the chart adds: its annotations, and the standard labels on the
    object and on its pod template (app.kubernetes.io/name where the chart's name is its value:
    kustomize's own name labels, the selectors' ones, stay)."""
    obj = json.loads(json.dumps(obj))
    metas = [obj["metadata"]]
    if obj["kind"] == "Deployment":
        metas.append(obj["spec"]["template"]["metadata"])
    _without(obj["metadata"], "annotations", HELM_ONLY_ANNOTATIONS)
    for meta in metas:
        if meta.get("labels", {}).get("app.kubernetes.io/name") == CHART_NAME:
            del meta["labels"]["app.kubernetes.io/name"]
        _without(meta, "labels", RELEASE_LABELS)
    return obj


def test_the_chart_lints_strictly_in_every_tls_mode(helm: Path) -> None:
    for mode in ("helm", "cert-manager", "manual"):
        done = run([helm, "lint", "--strict", CHART, "--set", f"tls.mode={mode}"])

        assert done.stdout.splitlines()[-1] == "1 chart(s) linted, 0 chart(s) failed", done.stdout
        assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout


def test_the_chart_lints_strictly_with_the_ui_and_apply_as_user(helm: Path) -> None:
    done = run(
        [
            helm,
            "lint",
            "--strict",
            CHART,
            "--set",
            "ui.enabled=true",
            "--set",
            "ui.applyAsUser=true",
        ]
    )

    assert done.stdout.splitlines()[-1] == "1 chart(s) linted, 0 chart(s) failed", done.stdout
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout


@pytest.mark.parametrize(
    ("sets", "kustomizations"),
    [
        (("tls.mode=manual",), ("base", "status", "providers")),
        (("tls.mode=cert-manager",), ("cert-manager", "status", "providers")),
        (
            (
                "tls.mode=manual",
                "monitoring.serviceMonitor=true",
                "monitoring.prometheusRule=true",
                "monitoring.dashboard=true",
            ),
            ("base", "status", "providers", "monitoring"),
        ),
        (("tls.mode=manual", "ui.enabled=true"), ("base", "status", "providers", "ui")),
        (
            ("tls.mode=manual", "ui.enabled=true", "ui.applyAsUser=true"),
            ("base", "status", "providers", UI_APPLY_AS_USER),
        ),
    ],
    ids=["manual-tls", "cert-manager", "monitoring", "ui", "ui-apply-as-user"],
)
def test_the_chart_renders_what_kustomize_builds(
    helm: Path, sets: tuple[str, ...], kustomizations: tuple[str, ...], tmp_path: Path
) -> None:
    chart = {
        key(o): without_helm_metadata(o)
        # the `helm test` Pod has no kustomize counterpart
        for o in template(helm, "namespace.create=true", *sets, flags=["--skip-tests"])
    }
    built = {key(o): o for o in kustomized(kustomizations, tmp_path / "overlay")}

    assert sorted(chart) == sorted(built)
    for name, obj in built.items():
        assert chart[name] == obj, name
    crds = [o for o in template(helm) if o["kind"] == "CustomResourceDefinition"]
    assert [o["metadata"]["annotations"] for o in crds] == [{"helm.sh/resource-policy": "keep"}] * 2


def test_every_value_lands_where_it_belongs(helm: Path) -> None:
    objects = template(
        helm,
        "image.repository=registry.example.com/platform/runway",
        "image.tag=1.2.3",
        "image.pullPolicy=Always",
        "webhook.replicas=3",
        "webhook.workers=4",
        "webhook.nodeSelector.pool=system",
        "webhook.resources.limits.memory=1Gi",
        "service.port=9443",
        "statusController.replicas=1",
        "statusController.gatewayURL=https://gw.example.com/v1",
        "providerConfigs.install=false",
        namespace="platform",
    )
    by_key = {key(o): o for o in objects}
    webhook = by_key[("Deployment", "platform", "runway-webhook")]["spec"]
    status = by_key[("Deployment", "platform", "runway-status-controller")]["spec"]
    (webhook_container,) = webhook["template"]["spec"]["containers"]
    (status_container,) = status["template"]["spec"]["containers"]
    hooks = [
        h
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for h in by_key[(kind, "", "runway")]["webhooks"]
    ]

    assert "runway-system" not in yaml.safe_dump_all(objects)
    assert not [k for k in by_key if k[0] == "InferenceProviderConfig"]
    assert {k[1] for k in by_key if k[0] not in CLUSTER_SCOPED} == {"platform"}
    assert (webhook["replicas"], status["replicas"]) == (3, 1)
    assert {c["image"] for c in (webhook_container, status_container)} == {
        "registry.example.com/platform/runway:1.2.3"
    }
    assert {c["imagePullPolicy"] for c in (webhook_container, status_container)} == {"Always"}
    assert webhook_container["args"][-2:] == ["--workers", "4"]
    assert webhook_container["resources"] == {
        "requests": {"cpu": "100m", "memory": "160Mi"},
        "limits": {"memory": "1Gi"},
    }
    assert webhook["template"]["spec"]["nodeSelector"] == {"pool": "system"}
    assert "nodeSelector" not in status["template"]["spec"]
    assert status_container["args"][-2:] == ["--gateway-url", "https://gw.example.com/v1"]
    assert by_key[("Service", "platform", "runway-webhook")]["spec"]["ports"][0]["port"] == 9443
    assert [h["clientConfig"]["service"] for h in hooks] == [
        {"name": "runway-webhook", "namespace": "platform", "path": path, "port": 9443}
        for path in (
            "/mutate",
            "/validate",
            "/validate-inferenceproviderconfig",
            "/validate-externalmodelprovider",
        )
    ]
    for hook in hooks:
        if "namespaceSelector" in hook:
            assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == [
                "kube-system",
                "platform",
            ]


def test_every_ui_value_lands_where_it_belongs(helm: Path) -> None:
    objects = template(
        helm,
        "image.repository=registry.example.com/platform/runway",
        "image.tag=1.2.3",
        "ui.enabled=true",
        "ui.replicas=2",
        "ui.workers=4",
        "ui.actions=true",
        "ui.nodeSelector.pool=system",
        "ui.tolerations[0].key=dedicated",
        "ui.tolerations[0].operator=Exists",
        "ui.resources.limits.memory=2Gi",
        "ui.oauth2Proxy.image.repository=mirror.example.com/oauth2-proxy",
        "ui.oauth2Proxy.image.tag=v7.15.3-fips",
        "ui.oauth2Proxy.resources.requests.cpu=50m",
        namespace="platform",
    )
    by_key = {key(o): o for o in objects}
    spec = by_key[("Deployment", "platform", "runway-ui")]["spec"]
    pod = spec["template"]["spec"]
    ui, proxy = pod["containers"]
    binding = by_key[("ClusterRoleBinding", "", "runway-ui")]

    assert spec["replicas"] == 2
    assert ui["image"] == "registry.example.com/platform/runway:1.2.3"
    assert ui["args"][-3:] == ["--workers", "4", "--actions"]
    assert (pod["nodeSelector"], pod["tolerations"]) == (
        {"pool": "system"},
        [{"key": "dedicated", "operator": "Exists"}],
    )
    assert ui["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "2Gi"},
    }
    assert proxy["image"] == "mirror.example.com/oauth2-proxy:v7.15.3-fips"
    assert proxy["resources"] == {
        "requests": {"cpu": "50m", "memory": "32Mi"},
        "limits": {"memory": "128Mi"},
    }
    assert binding["subjects"][0]["namespace"] == "platform"
    assert sorted(k for k in by_key if "runway-ui" in k[2]) == [
        ("ClusterRole", "", "runway-ui"),
        ("ClusterRoleBinding", "", "runway-ui"),
        ("Deployment", "platform", "runway-ui"),
        ("NetworkPolicy", "platform", "runway-ui"),
        ("Service", "platform", "runway-ui"),
        ("ServiceAccount", "platform", "runway-ui"),
    ]
    assert [k for k in map(key, template(helm, "ui.applyAsUser=true")) if "runway-ui" in k[2]] == []


# Every optional part of the chart on: what the label and pull-Secret tests render.
EVERYTHING = (
    "namespace.create=true",
    "tls.mode=cert-manager",
    "ui.enabled=true",
    "monitoring.serviceMonitor=true",
    "monitoring.prometheusRule=true",
    "monitoring.dashboard=true",
)


def pod_specs(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The pod spec of every object that runs pods (a Deployment's template, a Pod)."""
    return {
        key(o): o["spec"]["template"]["spec"] if o["kind"] == "Deployment" else o["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Pod")
    }


def test_image_pull_secrets_reach_every_pod_the_chart_deploys(helm: Path) -> None:
    pulled = pod_specs(
        template(
            helm, *EVERYTHING, "imagePullSecrets[0].name=regcred", "imagePullSecrets[1].name=b"
        )
    )
    default = pod_specs(template(helm, *EVERYTHING))

    assert sorted(pulled) == [
        ("Deployment", NAMESPACE, "runway-status-controller"),
        ("Deployment", NAMESPACE, "runway-ui"),
        ("Deployment", NAMESPACE, "runway-webhook"),
        ("Pod", NAMESPACE, "runway-test-webhook"),
    ]
    assert {k: s.get("imagePullSecrets") for k, s in pulled.items()} == {
        k: [{"name": "regcred"}, {"name": "b"}] for k in pulled
    }
    assert {k: s.get("imagePullSecrets") for k, s in default.items()} == {k: None for k in default}


def test_every_object_carries_the_standard_labels_with_the_release_name(helm: Path) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    done = run(
        [
            helm,
            "template",
            "platform-runway",
            CHART,
            "--namespace",
            NAMESPACE,
            *[a for s in EVERYTHING for a in ("--set", s)],
        ]
    )
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    standard = {
        "app.kubernetes.io/instance": "platform-runway",
        "app.kubernetes.io/version": chart["appVersion"],
        "app.kubernetes.io/managed-by": "Helm",
        "helm.sh/chart": f"runway-{chart['version']}",
    }
    templates = {
        key(o): o["spec"]["template"]["metadata"]["labels"]
        for o in objects
        if o["kind"] == "Deployment"
    }

    assert len(objects) == 37  # every template, the hooks and the test Pod included
    for obj in objects:
        labels = obj["metadata"].get("labels", {})
        assert {k: labels.get(k) for k in standard} == standard, key(obj)
        assert labels.get("app.kubernetes.io/name") in (
            CHART_NAME,
            "runway-webhook",
            "runway-status-controller",
            "runway-ui",
        ), key(obj)
    assert {
        k: {n: v for n, v in labels.items() if n in standard} for k, labels in templates.items()
    } == {k: standard for k in templates}
    for obj in objects:
        if obj["kind"] == "Deployment":
            # the selector stays kustomize's, so an upgrade from an older chart never replaces it
            assert obj["spec"]["selector"] == {
                "matchLabels": {"app.kubernetes.io/name": obj["metadata"]["name"]}
            }


CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "InferenceProviderConfig",
    "Namespace",
}


def secret_data(objects: list[dict[str, Any]]) -> dict[str, bytes]:
    """The files of the one Secret among `objects`, decoded."""
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def ca_bundles(objects: list[dict[str, Any]]) -> list[str]:
    """Every webhook's caBundle ("" where none is set), in order."""
    return [
        h["clientConfig"].get("caBundle", "")
        for o in objects
        if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for h in o["webhooks"]
    ]


def test_helm_tls_issues_a_chain_for_the_service_and_every_webhook_trusts_it(helm: Path) -> None:
    objects = template(helm, "tls.days=30", namespace="platform")
    data, bundles = secret_data(objects), ca_bundles(objects)
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    leaf = x509.load_pem_x509_certificate(data["tls.crt"])
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc

    assert sorted(data) == ["ca.crt", "tls.crt", "tls.key"]
    assert bundles == [base64.b64encode(data["ca.crt"]).decode()] * 4
    leaf.verify_directly_issued_by(ca)
    assert names.get_values_for_type(x509.DNSName) == [
        "runway-webhook.platform.svc",
        "runway-webhook.platform.svc.cluster.local",
    ]
    assert dt.timedelta(days=29) < lifetime <= dt.timedelta(days=30, hours=1)
    assert b"PRIVATE KEY" in data["tls.key"]
    assert [o for o in template(helm, "tls.mode=manual") if o["kind"] == "Secret"] == []
    assert ca_bundles(template(helm, "tls.mode=manual", "tls.caBundle=Q0E=")) == ["Q0E="] * 4


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "tls.mode=selfsigned",
            "at '/tls/mode': value must be one of 'helm', 'cert-manager', 'manual'",
        ),
        ("webhook.replica=3", "at '/webhook': additional properties 'replica' not allowed"),
        ("service.port=0", "at '/service/port': minimum: got 0, want 1"),
        ("tls.days=0", "at '/tls/days': minimum: got 0, want 1"),
        ("webhook.workers=many", "at '/webhook/workers': got string, want integer"),
        ("tls.caBundle=not base64!", "at '/tls/caBundle'"),
        ("statusController.gatewayURL=gw:80", "at '/statusController/gatewayURL'"),
        ("image.pullPolicy=Sometimes", "at '/image/pullPolicy'"),
        ("ui.workers=0", "at '/ui/workers': minimum: got 0, want 1"),
        ("ui.applyAsUser=yes", "at '/ui/applyAsUser': got string, want boolean"),
        ("ui.oauth2Proxy.image.tag=", "at '/ui/oauth2Proxy/image/tag'"),
        (
            "imagePullSecrets[0].secret=regcred",
            "at '/imagePullSecrets/0': additional properties 'secret' not allowed",
        ),
        (
            "ui.oauth2proxy.image.tag=v1",
            "at '/ui': additional properties 'oauth2proxy' not allowed",
        ),
    ],
)
def test_a_mistaken_value_is_refused_with_its_path(helm: Path, setting: str, message: str) -> None:
    done = run([helm, "template", RELEASE, CHART, "--set", setting], check=False)

    assert (done.returncode, done.stdout) == (1, "")
    assert message in done.stderr, done.stderr


# --- installed on a real API server ---------------------------------------------------------


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, helm: Path) -> Iterator[Cluster]:
    """A live control plane of its own (Deployments roll out onto KWOK nodes, so `helm --wait`
    has something to wait for), without Runway's CRDs: the chart brings them, and its webhooks
    cover every namespace, which the other clusters' tests must not meet."""
    missing = live.missing_binaries()
    if missing:
        unavailable(f"Helm install: {', '.join(missing)} not built in {binaries_dir()}")
    started = live.start_live_cluster(tmp_path_factory.mktemp("helm-plane"), crds=False)
    try:
        yield started
    finally:
        started.stop()


def helm_on(helm: Path, cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return run([helm, "--kubeconfig", cluster.kubeconfig, *args])


def live_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def exists(cluster: Cluster, *args: str) -> bool:
    return cluster.kubectl("get", *args, check=False).returncode == 0


def service_account_kubeconfig(
    cluster: Cluster, path: Path, account: str = "runway-webhook"
) -> Path:
    """What the pod's in-cluster credentials are: a token of the chart's ServiceAccount."""
    token = cluster.kubectl("-n", NAMESPACE, "create", "token", account).stdout.strip()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "test",
                "cluster": {
                    "server": cluster.server,
                    "certificate-authority": str(cluster.pki / "ca.pem"),
                },
            }
        ],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "pod", "context": {"cluster": "test", "user": account}}],
        "current-context": "pod",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def pod_command(args: list[str], *, port: int, tls: Path, kubeconfig: Path) -> list[str]:
    """The chart's container args with the pod-only settings mapped to this machine; fails on any
    argument it does not expect, so a changed Deployment is looked at here."""
    mapped = {
        "--host": "127.0.0.1",
        "--port": str(port),
        "--cert": str(tls / "tls.crt"),
        "--key": str(tls / "tls.key"),
    }
    out: list[str] = []
    items = iter(args)
    for arg in items:
        if arg == "--in-cluster":
            out += ["--kubeconfig", str(kubeconfig)]
        elif arg in mapped:
            next(items)
            out += [arg, mapped[arg]]
        else:
            assert arg in ("serve", "--workers", "2"), f"unexpected container argument {arg!r}"
            out.append(arg)
    return [str(RUNWAY), *out]


def point_service_at_loopback(cluster: Cluster) -> None:
    """What kube-proxy and the CNI do for a real pod: deliver the Service's traffic to it."""
    patch = {
        "spec": {
            "type": "ExternalName",
            "externalName": "localhost",
            "clusterIP": None,
            "clusterIPs": None,
            "selector": None,
        }
    }
    cluster.kubectl(
        "-n",
        NAMESPACE,
        "patch",
        "service",
        "runway-webhook",
        "--type",
        "merge",
        "-p",
        json.dumps(patch),
    )


def ready(server: Webhook) -> bool:
    if server.proc.poll() is not None:
        raise AssertionError(
            f"the pod's command exited {server.proc.returncode}:\n{server.log_text()}"
        )
    try:
        # by the Service's DNS name: the chart's certificate names no IP address
        request = b"GET /readyz HTTP/1.1\r\nHost: runway-webhook\r\nConnection: close\r\n\r\n"
        return server.raw(request)[0] == 200
    except OSError:
        return False


HOST_LABEL = "runway.test/webhook-host"
HOST_KEY = HOST_LABEL.replace(".", "\\.")  # as `--set` spells a dotted key


@pytest.fixture(scope="module")
def installed(
    helm: Path, plane: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    """`helm install --wait`, with the webhook's pod process started the moment its Secret and
    ServiceAccount exist. The webhook's pods may only land on a node labelled HOST_LABEL, which
    is labelled once the process answers /readyz: so when KWOK reports them Ready (and Helm goes
    on to the post-install hooks, the provider configs, which the webhook validates), it serves."""
    workdir = tmp_path_factory.mktemp("helm-pod")
    port = free_port()
    install_log = (workdir / "helm-install.log").open("w+")
    install = subprocess.Popen(
        [
            str(helm),
            "--kubeconfig",
            str(plane.kubeconfig),
            "install",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--create-namespace",
            "--wait",
            "--timeout",
            "3m",
            "--set",
            f"service.port={port}",
            "--set",
            f"webhook.nodeSelector.{HOST_KEY}=yes",
        ],
        stdout=install_log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until(
        lambda: exists(
            plane, "-n", NAMESPACE, "secret/runway-webhook-tls", "serviceaccount/runway-webhook"
        ),
        timeout=60,
        what="the chart's Secret and ServiceAccount",
    )
    secret = live_json(plane, "-n", NAMESPACE, "secret", "runway-webhook-tls")
    tls = workdir / "tls"
    tls.mkdir()
    for name in ("ca.crt", "tls.crt", "tls.key"):
        (tls / name).write_bytes(base64.b64decode(secret["data"][name]))
    wait_until(
        lambda: exists(plane, "-n", NAMESPACE, "deployment/runway-webhook"),
        timeout=60,
        what="the Deployment",
    )
    deployment = live_json(plane, "-n", NAMESPACE, "deployment", "runway-webhook")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    argv = pod_command(
        container["args"],
        port=port,
        tls=tls,
        kubeconfig=service_account_kubeconfig(plane, workdir / "pod.kubeconfig"),
    )
    log = workdir / "pod.log"
    handle = log.open("wb")
    proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    server = Webhook(port, tls, proc, log, [handle])
    try:
        point_service_at_loopback(plane)
        wait_until(lambda: ready(server), timeout=30, what="the chart's webhook /readyz")
        plane.kubectl("label", "node", "cpu-a", f"{HOST_LABEL}=yes")
        code = install.wait(timeout=240)
        install_log.seek(0)
        assert code == 0, install_log.read()
        yield server
    finally:
        if install.poll() is None:
            install.kill()
        terminate(proc)
        handle.close()
        install_log.close()


def admitted(cluster: Cluster, name: str, namespace: str) -> dict[str, Any]:
    done = cluster.strict_apply(model_deployment(name, namespace, gpu=2))
    assert (done.returncode, done.stderr) == (0, "")
    stored: dict[str, Any] = live_json(cluster, "-n", namespace, "modeldeployment", name)
    return stored


def test_the_installed_chart_admits_through_the_webhook_it_deploys(
    plane: Cluster, installed: Webhook
) -> None:
    plane.kubectl("create", "namespace", "team-a")
    stored = admitted(plane, "llama", "team-a")
    refused = plane.strict_apply(
        model_deployment(
            "typo", "team-a", gpu=1, provider="dynamo", overrides={"epp": {"imag": "r.example/e:1"}}
        )
    )
    configs = [
        live_json(plane, f"{kind}webhookconfiguration", "runway")
        for kind in ("mutating", "validating")
    ]

    assert (stored["spec"]["engine"]["type"], stored["spec"]["provider"]["name"]) == (
        "vllm",
        "kuberay",
    )
    assert stored["metadata"]["annotations"]["airunway.ai/provider-selection"] == "auto"
    assert refused.returncode == 1
    assert (
        'admission webhook "validate.modeldeployments.airunway.ai" denied the request: '
        'spec.provider.overrides.epp.imag: Unknown field: not declared in the schema (did you mean "image"?)'
    ) in refused.stderr
    assert [h["name"] for c in configs for h in c["webhooks"]] == WEBHOOK_NAMES
    ca = (installed.certs / "ca.crt").read_bytes()
    assert {h["clientConfig"]["caBundle"] for c in configs for h in c["webhooks"]} == {
        base64.b64encode(ca).decode()
    }


def test_the_ui_part_passes_strict_server_side_dry_run(
    helm: Path, plane: Cluster, installed: Webhook
) -> None:
    """kustomize/ui with its apply-as-user Component, as the chart renders it (equal object for
    object, above), against the API server's own schemas, in the installed release's namespace."""
    manifest = run(
        [
            helm,
            "template",
            RELEASE,
            CHART,
            "--namespace",
            NAMESPACE,
            "--show-only",
            "templates/ui.yaml",
            "--set",
            "ui.enabled=true",
            "--set",
            "ui.applyAsUser=true",
        ]
    ).stdout

    done = plane.kubectl(
        "apply",
        "--server-side",
        "--validate=strict",
        "--dry-run=server",
        "-f",
        "-",
        stdin=manifest,
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert sorted(done.stdout.splitlines()) == [
        f"{name} serverside-applied (server dry run)"
        for name in (
            "clusterrole.rbac.authorization.k8s.io/runway-ui",
            "clusterrolebinding.rbac.authorization.k8s.io/runway-ui",
            "deployment.apps/runway-ui",
            "networkpolicy.networking.k8s.io/runway-ui",
            "service/runway-ui",
            "serviceaccount/runway-ui",
        )
    ]


def test_an_upgrade_keeps_the_ca_the_api_server_trusts(
    helm: Path, plane: Cluster, installed: Webhook
) -> None:
    before = live_json(plane, "-n", NAMESPACE, "secret", "runway-webhook-tls")["data"]

    helm_on(
        helm,
        plane,
        "upgrade",
        RELEASE,
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--reuse-values",
        "--set",
        "webhook.replicas=3",
    )
    after = live_json(plane, "-n", NAMESPACE, "secret", "runway-webhook-tls")["data"]
    bundles = {
        h["clientConfig"]["caBundle"]
        for kind in ("mutating", "validating")
        for h in live_json(plane, f"{kind}webhookconfiguration", "runway")["webhooks"]
    }
    replicas = live_json(plane, "-n", NAMESPACE, "deployment", "runway-webhook")["spec"]["replicas"]

    assert after == before
    assert bundles == {before["ca.crt"]}
    assert replicas == 3
    plane.kubectl("create", "namespace", "team-b")
    assert admitted(plane, "qwen", "team-b")["spec"]["provider"]["name"] == "kuberay"


# What cluster DNS does for the `helm test` pod: the Service's name resolves to where the Service
# points (here the webhook's process on 127.0.0.1), read by the pod's Python at start-up.
CLUSTER_DNS = """\
import socket

_getaddrinfo = socket.getaddrinfo


def _resolve(host, *args, **kwargs):
    return _getaddrinfo({names!r}.get(host, host), *args, **kwargs)


socket.getaddrinfo = _resolve
"""


def helm_test_pod_command(
    cluster: Cluster, pod: dict[str, Any], workdir: Path, *, url: tuple[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The `helm test` pod's command, and its environment, as a process here: `python` is this
    interpreter, each Secret volume's items are files under `workdir` at the mount path's place,
    and the webhook Service's DNS name resolves to 127.0.0.1 (CLUSTER_DNS). `url` replaces a text
    in the URL argument (to break it)."""
    (container,) = pod["spec"]["containers"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    paths: dict[str, str] = {}
    for mount in container["volumeMounts"]:
        secret = volumes[mount["name"]]["secret"]
        data = live_json(cluster, "-n", NAMESPACE, "secret", secret["secretName"])["data"]
        local = workdir / mount["name"]
        local.mkdir()
        for item in secret["items"]:
            (local / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))
        paths[mount["mountPath"]] = str(local)
    assert container["command"][:2] == ["python", "-c"], container["command"]
    argv = [sys.executable, *container["command"][1:]]
    for old, new in paths.items():
        argv = [a.replace(old + "/", new + "/") if a.startswith(old + "/") else a for a in argv]
    if url is not None:
        argv = [a.replace(*url) if a.startswith("https://") else a for a in argv]
    site = workdir / "cluster-dns"
    site.mkdir()
    service = f"runway-webhook.{NAMESPACE}.svc"
    (site / "sitecustomize.py").write_text(CLUSTER_DNS.format(names={service: "127.0.0.1"}))
    return argv, {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}


def pod_phase(cluster: Cluster, name: str) -> str:
    done = cluster.kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json", check=False)
    return str(json.loads(done.stdout)["status"].get("phase", "")) if done.returncode == 0 else ""


def helm_test(
    helm: Path, cluster: Cluster, workdir: Path, *, url: tuple[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`helm test`, with the test pod's command run here once KWOK reports the pod Running, and
    the pod's phase set from the command's exit status as a kubelet would: (the command, helm)."""
    name = f"{RELEASE}-test-webhook"
    helm_proc = subprocess.Popen(
        [str(helm), "--kubeconfig", str(cluster.kubeconfig), "test", RELEASE, "-n", NAMESPACE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workdir)},
    )
    try:

        def running() -> bool:
            if helm_proc.poll() is not None:
                raise AssertionError(f"helm test exited early: {helm_proc.communicate()}")
            return pod_phase(cluster, name) == "Running"

        wait_until(running, timeout=60, what="KWOK to run the test pod")
        pod = live_json(cluster, "-n", NAMESPACE, "pod", name)
        argv, env = helm_test_pod_command(cluster, pod, workdir, url=url)
        command = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        phase = "Succeeded" if command.returncode == 0 else "Failed"
        cluster.kubectl(
            "-n",
            NAMESPACE,
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"phase": phase}}),
        )
        out, err = helm_proc.communicate(timeout=TIMEOUT)
    finally:
        if helm_proc.poll() is None:
            helm_proc.kill()
            helm_proc.communicate()
    return command, subprocess.CompletedProcess(helm_proc.args, helm_proc.returncode, out, err)


def suite(stdout: str) -> list[str]:
    """`helm test`'s report of its test pods, without the times."""
    lines = stdout.splitlines()
    assert lines[0] == f"NAME: {RELEASE}" and "STATUS: deployed" in lines, stdout
    return [
        line
        for line in lines[lines.index("STATUS: deployed") :]
        if line.startswith(("TEST", "Phase"))
    ]


def test_helm_test_checks_the_webhook_answers_over_tls_and_fails_when_it_does_not(
    helm: Path, plane: Cluster, installed: Webhook, tmp_path: Path
) -> None:
    """The chart's `helm test` pod (templates/tests/webhook.yaml) against the installed webhook,
    then with its URL broken: Helm reports the pod's phase, which follows the command's exit."""
    url = f"https://runway-webhook.{NAMESPACE}.svc:{installed.port}/readyz"
    (tmp_path / "ok").mkdir()
    (tmp_path / "broken").mkdir()

    command, done = helm_test(helm, plane, tmp_path / "ok")
    broken, failed = helm_test(helm, plane, tmp_path / "broken", url=("/readyz", "/nothing"))

    assert (command.returncode, command.stdout, command.stderr) == (
        0,
        f'{url}: 200 {{"status":"ready"}}\n',
        "",
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert suite(done.stdout) == [
        "TEST SUITE:     runway-test-webhook",
        "Phase:          Succeeded",
    ]
    assert (broken.returncode, broken.stdout) == (1, "")
    assert broken.stderr == f"{url.replace('/readyz', '/nothing')}: HTTP Error 404: NOT FOUND\n"
    assert failed.returncode == 1
    assert suite(failed.stdout) == ["TEST SUITE:     runway-test-webhook", "Phase:          Failed"]
    assert failed.stderr == (
        f"Error: resource Pod/{NAMESPACE}/runway-test-webhook not ready. status: Failed, "
        "message: pod runway-test-webhook failed\n"
    )


def ui_pod_command(args: list[str], *, port: int, key: Path, kubeconfig: Path) -> list[str]:
    """The chart's portal container args with the pod-only settings mapped to this machine (it
    binds the pod's loopback already); fails on any argument it does not expect."""
    mapped = {"--port": str(port), "--secret-key-file": str(key)}
    out: list[str] = []
    items = iter(args)
    for arg in items:
        if arg == "--in-cluster":
            out += ["--kubeconfig", str(kubeconfig)]
        elif arg in mapped:
            next(items)
            out += [arg, mapped[arg]]
        elif arg == "--host":
            out += [arg, next(items)]
            assert out[-1] == "127.0.0.1", "the portal is reached through its sign-in proxy only"
        else:
            assert arg in ("ui", "--workers", "2", "--actions", "--apply-as-user"), arg
            out.append(arg)
    return [str(RUNWAY), *out]


def portal_get(port: int, path: str, token: str = "") -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def portal_healthy(port: int, proc: subprocess.Popen[bytes], log: Path) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"the portal's command exited {proc.returncode}:\n{log.read_text()}")
    try:
        return portal_get(port, "/healthz") == (200, "ok")
    except OSError:
        return False


def ui_may(
    cluster: Cluster, verb: str, resource: str, group: str = "", subresource: str = ""
) -> bool:
    """The API server's answer (a SubjectAccessReview) for the chart's portal ServiceAccount,
    cluster-wide."""
    attributes = {"verb": verb, "resource": resource, "group": group, "subresource": subresource}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{NAMESPACE}:runway-ui",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
            "resourceAttributes": {k: v for k, v in attributes.items() if v},
        },
    }
    done = cluster.kubectl("create", "-o", "json", "-f", "-", stdin=json.dumps(review))
    return bool(json.loads(done.stdout)["status"].get("allowed", False))


# What the portal's ServiceAccount may and may not do (verb, resource, group), with or without
# apply-as-user: review tokens and read cluster facts; no tenant object (those are read and
# written with the signed-in user's token), no Secret, no access review of others, no
# impersonation.
UI_MAY = [
    ("create", "tokenreviews", "authentication.k8s.io"),
    ("list", "nodes", ""),
    ("list", "customresourcedefinitions", "apiextensions.k8s.io"),
    ("list", "pods", ""),
    ("list", "inferenceproviderconfigs", "airunway.ai"),
]
UI_MAY_NOT = [
    ("list", "modeldeployments", "airunway.ai"),
    ("create", "modeldeployments", "airunway.ai"),
    ("list", "externalmodelproviders", "gateway.tokenfactory.mirantis.com"),
    ("list", "events", ""),
    ("list", "secrets", ""),
    ("get", "secrets", ""),
    ("create", "subjectaccessreviews", "authorization.k8s.io"),
    ("impersonate", "users", ""),
    ("impersonate", "groups", ""),
    ("impersonate", "serviceaccounts", ""),
    ("impersonate", "uids", "authentication.k8s.io"),
]


def sign_in_through_the_chart_portal(
    plane: Cluster, args: list[str], workdir: Path, token: str
) -> tuple[tuple[int, str], tuple[int, str]]:
    """The chart's portal command run with its ServiceAccount's token: (/about unsigned, /about
    with `token` as the sign-in proxy forwards it)."""
    key = workdir / "secret-key"
    key.write_text(secrets.token_urlsafe(32))
    port = free_port()
    argv = ui_pod_command(
        args,
        port=port,
        key=key,
        kubeconfig=service_account_kubeconfig(plane, workdir / "ui.kubeconfig", "runway-ui"),
    )
    log = workdir / "ui.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            wait_until(lambda: portal_healthy(port, proc, log), timeout=30, what="the portal")
            return portal_get(port, "/about"), portal_get(port, "/about", token)
        finally:
            terminate(proc)


def test_the_ui_part_signs_users_in_with_the_least_rights_the_chart_gives_it(
    helm: Path, plane: Cluster, installed: Webhook, tmp_path: Path
) -> None:
    """The chart's portal command, with its ServiceAccount's token in place of the in-cluster
    credentials, checks a user's token with a TokenReview and lists the CRDs present (About):
    the rights kustomize/ui grants are enough. They are the same with ui.applyAsUser on, which
    adds flags only: the portal applies with the user's own token, never by impersonation."""
    plane.kubectl("create", "namespace", "team-ui")
    alice = make_user(plane, "team-ui", "alice")
    for apply_as_user, flags in ((False, []), (True, ["--actions", "--apply-as-user"])):
        helm_on(
            helm,
            plane,
            "upgrade",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--reuse-values",
            "--set",
            "ui.enabled=true",
            "--set",
            f"ui.applyAsUser={str(apply_as_user).lower()}",
        )
        deployment = live_json(plane, "-n", NAMESPACE, "deployment", "runway-ui")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        workdir = tmp_path / f"apply-as-user-{apply_as_user}"
        workdir.mkdir()

        unsigned, (status, page) = sign_in_through_the_chart_portal(
            plane, args, workdir, alice.token
        )

        assert (apply_as_user, args[-2 - len(flags) :]) == (
            apply_as_user,
            ["--workers", "2", *flags],
        )
        assert (apply_as_user, unsigned[0], status) == (apply_as_user, 401, 200), page
        assert f"Signed in as <strong>{alice.username}</strong>" in page
        assert "<tr><td>modeldeployments.airunway.ai</td><td>v1alpha1</td></tr>" in page
        assert [(apply_as_user, *r, ui_may(plane, *r)) for r in UI_MAY + UI_MAY_NOT] == [
            (apply_as_user, *r, r in UI_MAY) for r in UI_MAY + UI_MAY_NOT
        ]


def test_uninstall_removes_the_webhooks_and_keeps_the_models_and_their_configs(
    helm: Path, plane: Cluster, installed: Webhook
) -> None:
    plane.kubectl("create", "namespace", "team-c")
    admitted(plane, "phi", "team-c")

    helm_on(helm, plane, "uninstall", RELEASE, "--namespace", NAMESPACE)
    hooks = plane.kubectl(
        "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"
    ).stdout.split()
    crds = plane.kubectl("get", "crd", "-o", "name").stdout.split()
    models = plane.kubectl("get", "modeldeployments", "-A", "-o", "name").stdout.split()
    configs = plane.kubectl("get", "inferenceproviderconfigs", "-o", "name").stdout.split()

    assert hooks == []
    assert crds == [
        "customresourcedefinition.apiextensions.k8s.io/inferenceproviderconfigs.airunway.ai",
        "customresourcedefinition.apiextensions.k8s.io/modeldeployments.airunway.ai",
    ]
    assert sorted(models) == sorted(
        f"modeldeployment.airunway.ai/{n}" for n in ("llama", "phi", "qwen")
    )
    assert configs == [
        f"inferenceproviderconfig.airunway.ai/{n}"
        for n in ("dynamo", "kaito", "kuberay", "llmd", "vllm")
    ]
