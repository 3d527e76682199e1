"""Status Runway writes is always status the API server accepts, and small, whatever the
upstream objects' status says: reasons match metav1.Condition's pattern, messages are cut at
MESSAGE_LIMIT (core/status/conditions.py). Upstream status is written by whoever can write it,
so these are properties over any text, through every provider's mapping."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.kinds import ANNOTATION_PROVIDER_REASON, ModelDeployment
from core.model.plugin import Workload
from core.status.conditions import MESSAGE_LIMIT, REASON_LIMIT, bounded, valid_reason
from core.status.modeldeployment import GatewayState, model_deployment_status
from core.status.providers import HEALTH_ANNOTATION, Observed, provider_status
from providers.modules import plugins
from tests.support.stored import stored

# metav1.Condition's reason pattern (k8s.io/apimachinery/pkg/apis/meta/v1 types.go)
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
ANY_TEXT = st.text(max_size=40) | st.text(min_size=1000, max_size=5000)
PLUGINS = {p.name: p for p in plugins()}


def assert_bounded(status: dict[str, Any]) -> None:
    for c in status["conditions"]:
        assert REASON.match(c["reason"]) and len(c["reason"]) <= REASON_LIMIT, c["reason"]
        assert len(c["message"]) <= MESSAGE_LIMIT
    assert len(status.get("message", "")) <= MESSAGE_LIMIT


@settings(max_examples=150, deadline=None)
@given(reason=ANY_TEXT, message=ANY_TEXT, gateway_message=ANY_TEXT, why=ANY_TEXT)
def test_any_workload_text_becomes_a_status_the_api_server_accepts(
    reason: str, message: str, gateway_message: str, why: str
) -> None:
    obj = stored()
    obj["metadata"]["annotations"] = {
        **obj["metadata"]["annotations"],
        ANNOTATION_PROVIDER_REASON: why,
    }
    workload = Workload("Running", reason, message, 1, 1, 1, "m", 8000)
    gateway = GatewayState(False, reason, gateway_message, "http://gw", "m")

    status = model_deployment_status(ModelDeployment(obj), workload, gateway=gateway, now="t")

    assert_bounded(status)
    assert len(status["provider"]["selectedReason"]) <= MESSAGE_LIMIT
    # what fits is kept as it was
    if len(message) + len(gateway_message) < MESSAGE_LIMIT - 60:
        assert message in status["message"]


@settings(max_examples=150, deadline=None)
@given(
    provider=st.sampled_from(sorted(PLUGINS)),
    reason=ANY_TEXT,
    message=ANY_TEXT,
    state=st.sampled_from(["Ready", "NotReady", "failed", "Pending", "x"]),
)
def test_hostile_upstream_conditions_through_every_provider_mapping_stay_bounded(
    provider: str, reason: str, message: str, state: str
) -> None:
    md = ModelDeployment(stored())
    conditions = [
        {"type": t, "status": s, "reason": reason, "message": message}
        for t in ("WorkspaceSucceeded", "InferenceReady", "Ready", "Progressing", "Available")
        for s in ("False",)
    ]
    upstream = {
        "metadata": {"generation": 1},
        "spec": {"replicas": 1},
        "status": {"state": state, "conditions": conditions, "observedGeneration": 1},
    }
    observed = {
        f"{kind}/m": upstream
        for kind in ("Deployment", "DynamoGraphDeployment", "Workspace", "RayService")
    }

    workload = PLUGINS[provider].watched.workload_status(md, observed)
    status = model_deployment_status(md, workload, gateway=None, now="t")

    assert_bounded(status)


@settings(max_examples=80, deadline=None)
@given(crd=st.text(min_size=1, max_size=3000), selector=st.text(min_size=1, max_size=3000))
def test_a_provider_config_status_stays_bounded_for_any_health_annotation(
    crd: str, selector: str
) -> None:
    annotation = json.dumps({"crds": [{"name": crd}], "operatorPods": [{"selectors": [selector]}]})
    config = {"metadata": {"name": "p", "annotations": {HEALTH_ANNOTATION: annotation}}}

    status = provider_status(config, Observed({}, {}), now="t", version="v", upstream="u")

    assert_bounded(status)


def test_bounded_and_valid_reason_keep_what_is_already_fine() -> None:
    assert bounded("x" * MESSAGE_LIMIT) == "x" * MESSAGE_LIMIT
    assert bounded("x" * (MESSAGE_LIMIT + 1)) == "x" * (MESSAGE_LIMIT - 1) + "\u2026"
    assert [valid_reason(r) for r in ("Ready", "a b", "", "9lives", "Ok:", "P" * 200)] == [
        "Ready",
        "ab",
        "Unknown",
        "Unknown",
        "Ok",
        "P" * REASON_LIMIT,
    ]
