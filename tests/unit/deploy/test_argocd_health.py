"""The shipped Argo CD health scripts (kustomize/argocd/argocd-cm-health.yaml) run in Lua 5.1, the
language of Argo CD's gopher-lua, over generated statuses. The ModelDeployment script must
agree with kstatus (Flux's health, cli-utils pkg/kstatus/status: observedGeneration behind the
generation or Reconciling=True is InProgress, Stalled=True is Failed, else Current) on every
status the status controller writes, and call Healthy only what serves. The tests of Argo CD's
layout (resource_customizations/**/health_test.yaml) hold here too, and match docs/status.md.
The e2e tier runs the same scripts in the real application controller (tests/e2e/test_argocd.py),
in Argo CD's own test (tests/e2e/test_argocd_lua.py) and against the real kstatus
(tests/e2e/test_kstatus.py)."""

from __future__ import annotations

from typing import Any

import lupa.lua51 as lua
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.kinds import ModelDeployment
from core.model.plugin import Workload
from core.status.modeldeployment import PHASES, GatewayState, model_deployment_status
from tests.support.health import (
    CUSTOMIZATIONS,
    HealthTest,
    checks,
    documented,
    health_tests,
    model_deployment_tests,
)
from tests.support.paths import ROOT
from tests.support.stored import stored

SCRIPTS = ROOT / "kustomize" / "argocd" / "argocd-cm-health.yaml"
MODEL_DEPLOYMENT = "resource.customizations.health.airunway.ai_ModelDeployment"


def health(key: str, obj: dict[str, Any]) -> dict[str, str]:
    """What Argo CD's health script `key` answers for `obj`."""
    script = yaml.safe_load(SCRIPTS.read_text())["data"][key]
    runtime = lua.LuaRuntime()
    runtime.globals().obj = runtime.table_from(obj, recursive=True)
    answer = runtime.execute(script)
    return {str(k): str(v) for k, v in answer.items()}


def kstatus(obj: dict[str, Any]) -> str:
    """kstatus' generic rules for a custom resource (the test's oracle, from cli-utils)."""
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    observed = status.get("observedGeneration")
    if observed is not None and observed != obj["metadata"]["generation"]:
        return "InProgress"
    truths = {c["type"] for c in status.get("conditions") or () if c["status"] == "True"}
    if "Reconciling" in truths:
        return "InProgress"
    if "Stalled" in truths:
        return "Failed"
    return "Current"


# Argo CD answers "Progressing" (Pending deletion) for a deleting object before any script runs;
# the script says Progressing too.
ARGO_FOR = {
    "InProgress": "Progressing",
    "Failed": "Degraded",
    "Current": "Healthy",
    "Terminating": "Progressing",
}
WORKLOADS = st.builds(
    Workload,
    st.sampled_from(["Pending", "Deploying", "Running", "Failed"]),
    st.sampled_from(["R", "IncompatibleUpstream", "DeploymentReady"]),
    st.text(min_size=1, max_size=20),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.just("m"),
    st.just(8000),
    st.booleans(),
)
GATEWAYS = st.none() | st.builds(
    GatewayState, st.booleans(), st.just("NotAccepted"), st.just("why"), st.just("u"), st.just("m")
)


@settings(max_examples=150, deadline=None)
@given(workload=WORKLOADS, gateway=GATEWAYS, behind=st.booleans(), deleting=st.booleans())
def test_the_model_deployment_script_agrees_with_kstatus_on_every_status_written(
    workload: Workload, gateway: GatewayState | None, behind: bool, deleting: bool
) -> None:
    obj = stored(generation=3)
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    status = model_deployment_status(ModelDeployment(obj), workload, gateway=gateway, now="t")
    if behind:  # the spec changed since the controller wrote this status
        obj["metadata"]["generation"] = 4
    obj["status"] = status

    answer = health(MODEL_DEPLOYMENT, obj)

    assert answer["status"] == ARGO_FOR[kstatus(obj)]
    serving = (
        not behind
        and not deleting
        and workload.phase == "Running"
        and (gateway is None or gateway.ready)
    )
    assert (answer["status"] == "Healthy") == serving
    if answer["status"] == "Degraded":
        assert answer["message"] == status["message"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, ("Progressing", "waiting for the Runway status controller")),
        # what the CRD's default gives a ModelDeployment no controller has reported on
        ({"observedGeneration": 0}, ("Progressing", "waiting for the Runway status controller")),
        (
            {"observedGeneration": 2, "phase": "Running", "message": "m"},
            ("Progressing", "m"),  # no Ready condition: not known to serve
        ),
    ],
    ids=["no-status", "defaulted", "no-conditions"],
)
def test_a_model_deployment_no_controller_reports_on_is_progressing(
    status: dict[str, Any] | None, expected: tuple[str, str]
) -> None:
    obj: dict[str, Any] = {"metadata": {"name": "m", "generation": 2}}
    if status is not None:
        obj["status"] = status

    answer = health(MODEL_DEPLOYMENT, obj)

    assert (answer["status"], answer["message"]) == expected


def test_every_script_answers_progressing_for_an_object_without_status() -> None:
    keys = sorted(yaml.safe_load(SCRIPTS.read_text())["data"])

    answers = {k: health(k, {"metadata": {"name": "m", "generation": 1}})["status"] for k in keys}

    assert answers == dict.fromkeys(keys, "Progressing")


@pytest.mark.parametrize("test", health_tests(), ids=lambda t: t.name)
def test_the_deployed_scripts_give_every_answer_of_the_health_tests(test: HealthTest) -> None:
    key = f"resource.customizations.health.{test.check.replace('/', '_')}"

    assert health(key, test.obj()) == {"status": test.status, "message": test.message}


def test_every_check_is_tested_on_each_of_its_testdata_files_and_no_other() -> None:
    tested = {
        check: sorted(t.input_path for t in health_tests() if t.check == check)
        for check in checks()
    }

    assert tested == {
        check: sorted(
            p.relative_to(CUSTOMIZATIONS / check).as_posix()
            for p in (CUSTOMIZATIONS / check / "testdata").glob("*.yaml")
        )
        for check in checks()
    }
    deployed = yaml.safe_load(SCRIPTS.read_text())["data"]
    assert sorted(deployed) == [
        f"resource.customizations.health.{c.replace('/', '_')}" for c in checks()
    ]


def test_the_model_deployment_testdata_hold_every_phase_the_controller_writes() -> None:
    objs = {t.case: t.obj() for t in model_deployment_tests()}
    written = {o["status"].get("phase") for o in objs.values()}

    assert written == {None, *PHASES}  # None: no controller has written (the CRD's default)
    assert objs["unreported"]["status"] == {"observedGeneration": 0}
    behind = objs["generation-behind"]
    assert behind["metadata"]["generation"] == behind["status"]["observedGeneration"] + 1


def test_the_argo_cd_answers_are_what_docs_status_promises() -> None:
    promised = {case: argo for case, (_, argo) in documented().items()}

    assert promised == {t.case: t.status for t in model_deployment_tests()}
