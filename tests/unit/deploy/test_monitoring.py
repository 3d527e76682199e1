"""kustomize/monitoring: the ServiceMonitor scrapes what the webhook serves, every alert and
dashboard expression is valid PromQL (parsed by promql-parser, which also checks function
signatures), and every metric and label they name is one the webhook exports: the names are
read from the webhook's own metric definitions, not from a list kept here."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import promql_parser
import pytest

from certs.bundle import Identity, issue_bundle
from tests.support.kustomize import build
from tests.support.paths import ROOT
from webhook.metrics import Metrics

MONITORING = ROOT / "kustomize" / "monitoring"
# Labels Prometheus adds to every scraped series (target labels of a ServiceMonitor endpoint).
TARGET_LABELS = frozenset(
    {"job", "instance", "namespace", "pod", "service", "container", "endpoint"}
)
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return build("monitoring")


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


@dataclass(frozen=True)
class Exported:
    family: str
    labels: frozenset[str]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Exported]:
    """Every sample name the webhook can export: its family and label names. Each metric of a
    fresh Metrics is touched once so that its labelled series exist."""
    certs = tmp_path_factory.mktemp("certs")
    identity = Identity.for_service("runway-webhook", "runway-system")
    issue_bundle(certs, identity, days=1, ca_days=2, now=dt.datetime.now(dt.UTC))
    metrics = Metrics(certificate=str(certs / "tls.crt"))
    metrics.observe(
        group="airunway.ai", kind="ModelDeployment", operation="CREATE", allowed=True, seconds=0.1
    )
    metrics.failed(500)
    metrics.selected(provider="kaito", how="auto")
    metrics.source_ready(True)
    metrics.watch_restarted("ended")
    names: dict[str, Exported] = {}
    for family in metrics.registry.collect():
        labels = frozenset(k for s in family.samples for k in s.labels if k != "le")
        for suffix in SUFFIXES[family.type]:
            extra = {"le"} if suffix == "_bucket" else set()
            names[family.name + suffix] = Exported(family.name, labels | extra)
    return names


def selectors(expr: str) -> list[tuple[str, list[str]]]:
    """(metric name, label names matched) of every selector in `expr`; raises unless it parses."""
    found: list[tuple[str, list[str]]] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            found.append((node.name or "", sorted(m.name for m in node.matchers.matchers)))
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for g in one(objects, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]


def dashboard(objects: list[dict[str, Any]]) -> dict[str, Any]:
    config_map = one(objects, "ConfigMap")
    document: dict[str, Any] = json.loads(config_map["data"]["runway-webhook.json"])
    return document


def expressions(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(where, expression) of every alert and every dashboard target."""
    found = [(f"alert {r['alert']}", r["expr"]) for r in rules(objects)]
    found += [
        (f"panel {p['title']}", t["expr"])
        for p in dashboard(objects)["panels"]
        for t in p["targets"]
    ]
    return found


def test_monitoring_builds_a_service_monitor_alerts_and_a_dashboard(
    objects: list[dict[str, Any]],
) -> None:
    kinds = sorted(
        f"{o['kind']}/{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects
    )
    config_map = one(objects, "ConfigMap")

    assert kinds == [
        "ConfigMap/runway-system/runway-webhook-dashboard",
        "PrometheusRule/runway-system/runway-webhook",
        "ServiceMonitor/runway-system/runway-webhook",
    ]
    assert config_map["metadata"]["labels"] == {
        "grafana_dashboard": "1",
        "app.kubernetes.io/name": "runway-webhook",
    }
    assert (
        one(objects, "PrometheusRule")["apiVersion"],
        one(objects, "ServiceMonitor")["apiVersion"],
    ) == (
        "monitoring.coreos.com/v1",
        "monitoring.coreos.com/v1",
    )


def test_the_service_monitor_scrapes_the_webhook_service_over_its_tls_name(
    objects: list[dict[str, Any]],
) -> None:
    (service,) = [o for o in build("base") if o["kind"] == "Service"]
    (endpoint,) = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    served_name = Identity.for_service("runway-webhook", "runway-system").dns_names[0]

    assert endpoint["port"] in [p["name"] for p in service["spec"]["ports"]]
    assert (endpoint["scheme"], endpoint["path"], endpoint["tlsConfig"]["serverName"]) == (
        "https",
        "/metrics",
        served_name,
    )
    assert endpoint["relabelings"] == [
        {
            "sourceLabels": ["__meta_kubernetes_service_name"],
            "regex": service["metadata"]["name"],
            "action": "keep",
        }
    ]


def test_the_alerts_cover_what_an_operator_of_the_webhook_needs(
    objects: list[dict[str, Any]],
) -> None:
    found = {(r["alert"], r["labels"]["severity"]) for r in rules(objects)}

    assert found == {
        ("RunwayWebhookNoReadyReplicas", "critical"),
        ("RunwayProviderConfigsStale", "warning"),
        ("RunwayWebhookErrors", "warning"),
        ("RunwayWebhookLatencyHigh", "warning"),
        ("RunwayServingCertificateExpiresSoon", "warning"),
        ("RunwayServingCertificateExpiresVerySoon", "critical"),
    }
    for rule in rules(objects):
        assert sorted(rule) == ["alert", "annotations", "expr", "for", "labels"], rule["alert"]
        assert sorted(rule["annotations"]) == ["description", "summary"], rule["alert"]


def test_every_expression_parses_and_names_only_exported_metrics_and_labels(
    objects: list[dict[str, Any]], exported: dict[str, Exported]
) -> None:
    problems = []
    for where, expr in expressions(objects):
        try:
            found = selectors(expr)
        except ValueError as err:
            problems.append(f"{where}: does not parse: {err}")
            continue
        for name, labels in found:
            if name not in exported:
                problems.append(f"{where}: {name} is not exported")
            elif unknown := set(labels) - exported[name].labels - TARGET_LABELS:
                problems.append(f"{where}: {name} has no label {sorted(unknown)}")

    assert problems == []


def test_every_exported_metric_is_on_the_dashboard(
    objects: list[dict[str, Any]], exported: dict[str, Exported]
) -> None:
    panels = [(w, e) for w, e in expressions(objects) if w.startswith("panel ")]
    shown = {exported[name].family for _, expr in panels for name, _ in selectors(expr)}

    assert shown == {e.family for e in exported.values()}


@pytest.mark.parametrize(
    "expr",
    [
        "rate(runway_admission_requests_total)",
        "sum(rate(x[5m])",
        "nofunction(runway_webhook_ready)",
    ],
    ids=["range-function-on-a-vector", "unclosed", "unknown-function"],
)
def test_the_parser_refuses_what_prometheus_would(expr: str) -> None:
    with pytest.raises(ValueError):
        selectors(expr)


def test_dashboard_panels_are_unique_and_use_the_datasource_variable(
    objects: list[dict[str, Any]],
) -> None:
    panels = dashboard(objects)["panels"]

    assert len({p["id"] for p in panels}) == len(panels)
    assert {json.dumps(p["datasource"]) for p in panels} == {
        json.dumps({"type": "prometheus", "uid": "${datasource}"})
    }
    assert [v["name"] for v in dashboard(objects)["templating"]["list"]] == ["datasource"]
