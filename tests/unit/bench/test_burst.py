"""The pieces of the burst bench that need no cluster (tests/support/burst.py and
burst_metrics.py): the webhook configurations as shipped, the burst's objects, how an answer is
counted, percentiles and the metrics of a round."""

from __future__ import annotations

import json

import pytest

from core.admission.pipeline import admit
from tests.support.builders import shipped_registry
from tests.support.burst import (
    SHIPPED_WEBHOOKS,
    Outcome,
    burst_models,
    classify,
    connections_to,
    nearest_rank,
    shipped_webhooks,
    status_message,
)
from tests.support.burst_metrics import Latency, round_metrics
from tests.support.promtext import parse


def test_shipped_configurations_keep_their_policies_and_call_the_url() -> None:
    configs = shipped_webhooks("https://127.0.0.1:9443")

    assert [(c["kind"], c["metadata"]["name"]) for c in configs] == [
        ("MutatingWebhookConfiguration", "runway"),
        ("ValidatingWebhookConfiguration", "runway"),
    ]
    hooks = [h for c in configs for h in c["webhooks"]]
    assert [
        (h["name"], h["clientConfig"], h["failurePolicy"], h["timeoutSeconds"]) for h in hooks
    ] == [
        (
            "mutate.modeldeployments.airunway.ai",
            {"url": "https://127.0.0.1:9443/mutate"},
            "Fail",
            5,
        ),
        (
            "validate.modeldeployments.airunway.ai",
            {"url": "https://127.0.0.1:9443/validate"},
            "Fail",
            5,
        ),
        (
            "validate.inferenceproviderconfigs.airunway.ai",
            {"url": "https://127.0.0.1:9443/validate-inferenceproviderconfig"},
            "Fail",
            5,
        ),
        (
            "validate.externalmodelproviders.gateway.tokenfactory.mirantis.com",
            {"url": "https://127.0.0.1:9443/validate-externalmodelprovider"},
            "Fail",
            5,
        ),
    ]
    assert "url:" not in SHIPPED_WEBHOOKS.read_text()  # the file itself is left as shipped


def test_the_burst_cycles_through_six_admitted_shapes_of_five_providers() -> None:
    registry = shipped_registry()
    models = burst_models("ns", 12)

    admitted = [admit(m, registry=registry) for m in models]

    assert [m["metadata"]["name"] for m in models][:3] == ["m000", "m001", "m002"]
    assert [a.allowed for a in admitted] == [True] * 12
    assert [a.obj["spec"]["provider"]["name"] for a in admitted] == [
        "vllm",
        "llmd",
        "kuberay",
        "dynamo",
        "kaito",
        "kaito",
    ] * 2
    assert [("provider" in m["spec"]) for m in models[:6]] == [True, True, False, True, True, False]


def status(message: str, code: int) -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "message": message, "code": code}
    ).encode()


TIMEOUT = (
    'Internal error occurred: failed calling webhook "mutate.modeldeployments.airunway.ai": '
    'failed to call webhook: Post "https://127.0.0.1:1/mutate?timeout=5s": context deadline exceeded'
)
REFUSED = (
    'Internal error occurred: failed calling webhook "mutate.modeldeployments.airunway.ai": '
    'failed to call webhook: Post "https://127.0.0.1:1/mutate?timeout=5s": dial tcp: connection refused'
)


@pytest.mark.parametrize(
    ("code", "body", "outcome"),
    [
        (201, b"{}", Outcome.CREATED),
        (500, status(TIMEOUT, 500), Outcome.WEBHOOK_TIMEOUT),
        (500, status(REFUSED, 500), Outcome.WEBHOOK_ERROR),
        (429, status("Too many requests, please try again later.", 429), Outcome.THROTTLED),
        (503, status("service unavailable", 503), Outcome.SERVER_ERROR),
        (
            422,
            status(
                'admission webhook "validate.modeldeployments.airunway.ai" denied the request: x',
                422,
            ),
            Outcome.DENIED,
        ),
        (409, status('modeldeployments.airunway.ai "m000" already exists', 409), Outcome.OTHER),
    ],
    ids=["created", "deadline", "refused", "throttled", "5xx", "denied", "conflict"],
)
def test_each_answer_is_counted_once_in_its_class(code: int, body: bytes, outcome: Outcome) -> None:
    assert classify(code, body) is outcome


def test_status_message_reads_the_status_or_keeps_the_raw_text() -> None:
    assert [status_message(status(TIMEOUT, 500)), status_message(b"<html>bad gateway")] == [
        TIMEOUT,
        "<html>bad gateway",
    ]


def test_nearest_rank_takes_the_ceiling_rank() -> None:
    values = [float(v) for v in range(300, 0, -1)]

    assert [nearest_rank(values, q) for q in (0.5, 0.99, 1.0)] == [150.0, 297.0, 300.0]


BEFORE = """\
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
# TYPE apiserver_admission_webhook_request_total counter
# TYPE apiserver_admission_webhook_rejection_count counter
# TYPE apiserver_flowcontrol_rejected_requests_total counter
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="modeldeployments",verb="POST"} 1
# TYPE apiserver_request_duration_seconds histogram
"""

AFTER = """\
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m",operation="CREATE",rejected="true",type="admit",le="0.1"} 3
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m",operation="CREATE",rejected="true",type="admit",le="+Inf"} 4
apiserver_admission_webhook_admission_duration_seconds_sum{name="m",operation="CREATE",rejected="true",type="admit"} 5.2
apiserver_admission_webhook_admission_duration_seconds_count{name="m",operation="CREATE",rejected="true",type="admit"} 4
# TYPE apiserver_admission_webhook_request_total counter
apiserver_admission_webhook_request_total{code="0",name="m",operation="CREATE",rejected="true",type="admit"} 1
apiserver_admission_webhook_request_total{code="200",name="m",operation="CREATE",rejected="false",type="admit"} 3
# TYPE apiserver_admission_webhook_rejection_count counter
apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="m",operation="CREATE",rejection_code="0",type="admit"} 1
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="time-out"} 2
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="modeldeployments",verb="POST"} 4
apiserver_request_total{code="429",resource="modeldeployments",verb="POST"} 2
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{dry_run="",resource="modeldeployments",subresource="",verb="POST",le="1"} 6
apiserver_request_duration_seconds_bucket{dry_run="",resource="modeldeployments",subresource="",verb="POST",le="+Inf"} 6
apiserver_request_duration_seconds_sum{dry_run="",resource="modeldeployments",subresource="",verb="POST"} 1.2
apiserver_request_duration_seconds_count{dry_run="",resource="modeldeployments",subresource="",verb="POST"} 6
apiserver_request_duration_seconds_bucket{dry_run="All",resource="modeldeployments",subresource="",verb="POST",le="1"} 1
apiserver_request_duration_seconds_bucket{dry_run="All",resource="modeldeployments",subresource="",verb="POST",le="+Inf"} 1
apiserver_request_duration_seconds_sum{dry_run="All",resource="modeldeployments",subresource="",verb="POST"} 0.1
apiserver_request_duration_seconds_count{dry_run="All",resource="modeldeployments",subresource="",verb="POST"} 1
"""


def rounded(x: Latency) -> Latency:
    return Latency(x.what, x.count, round(x.mean, 6), round(x.p50, 6), round(x.p99, 6), x.top)


def test_round_metrics_are_the_deltas_by_webhook_code_and_priority_level() -> None:
    metrics = round_metrics(parse(BEFORE), parse(AFTER), resource="modeldeployments")

    assert [rounded(x) for x in metrics.webhooks] == [
        Latency("m admit rejected=true", 4, 1.3, 0.066667, 0.1, "1 in (0.1, inf] s")
    ]
    assert metrics.creates is not None
    assert rounded(metrics.creates) == Latency(
        "API server POST modeldeployments", 6, 0.2, 0.5, 0.99, "6 in (0, 1] s"
    )
    assert (
        metrics.webhook_codes,
        metrics.rejections,
        metrics.flow_rejected,
        metrics.throttled,
    ) == (
        {(("code", "0"), ("name", "m")): 1.0, (("code", "200"), ("name", "m")): 3.0},
        {
            (
                ("error_type", "calling_webhook_error"),
                ("name", "m"),
                ("rejection_code", "0"),
            ): 1.0
        },
        {(("priority_level", "workload-low"), ("reason", "time-out")): 2.0},
        2.0,
    )


TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:20FB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:20FB 0100007F:A001 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0100007F:20FB 0100007F:A002 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   3: 0100007F:20FB 0100007F:A003 06 00000000:00000000 00:00000000 00000000     0        0 4 1
   4: 0100007F:A001 0100007F:20FB 01 00000000:00000000 00:00000000 00000000     0        0 5 1
   5: 0100007F:20FC 0100007F:A004 01 00000000:00000000 00:00000000 00000000     0        0 6 1
"""


def test_connections_to_a_port_are_the_established_ones_on_its_side() -> None:
    assert connections_to(TCP, 0x20FB) == {
        ("0100007F:20FB", "0100007F:A001"),
        ("0100007F:20FB", "0100007F:A002"),
    }
