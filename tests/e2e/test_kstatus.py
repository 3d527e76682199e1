"""kstatus, as Flux runs it, over every status Runway's controller writes.

Flux's kustomize-controller decides `wait` and `healthChecks` with kstatus: `status.Compute` of
github.com/fluxcd/cli-utils (Flux's fork of sigs.k8s.io/cli-utils) for a kind with no
expression. bin/kstatus (tests/cluster/kstatus, `make cluster`) is that function, built from the
version kustomize-controller's module selects at the pin. Its answer for each ModelDeployment
status of the Argo CD testdata (generated from core/status) must be what docs/status.md
promises, and what Runway's Argo CD script says, phase by phase."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest

from core.checks.health import HEALTH_ANNOTATION, health_spec
from core.status.providers import Observed, pod_checks, provider_status
from kubeio.shipped import bundled_config_objects
from tests.support.cluster import binaries_dir
from tests.support.health import documented, model_deployment_tests

# kstatus's answer (status, message) for each testdata case, whole.
EXPECTED = {
    "unreported": (
        "InProgress",
        "ModelDeployment generation is 1, but latest observed generation is 0",
    ),
    "pending": ("InProgress", "Deployment/m does not exist yet"),
    "pending-scaled-to-zero": ("InProgress", "Deployment/m wants 0 replicas"),
    "deploying": ("InProgress", "Deployment/m: 0 of 1 replicas available, 1 updated"),
    "running": ("Current", "Resource is Ready"),
    "running-gateway-accepted": ("Current", "Resource is Ready"),
    "running-gateway-not-accepted": (
        "InProgress",
        "Deployment/m: all 1 replicas are ready; the gateway does not route yet: "
        "InferencePool/m does not exist yet",
    ),
    "failed": ("Failed", 'ReplicaSet "m-7d9c" has timed out progressing.'),
    "failed-incompatible-upstream": (
        "Failed",
        "Deployment/m: the installed upstream does not declare a field; "
        "upgrade the upstream or Runway's pin",
    ),
    "terminating": ("Terminating", "Resource scheduled for deletion"),
    "generation-behind": (
        "InProgress",
        "ModelDeployment generation is 2, but latest observed generation is 1",
    ),
}
# What Argo CD says where kstatus says this (Argo CD's own answer for a deleting object is
# Progressing, "Pending deletion", before any script runs).
ARGO_FOR = {
    "InProgress": "Progressing",
    "Failed": "Degraded",
    "Current": "Healthy",
    "Terminating": "Progressing",
}


def kstatus(objects: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """bin/kstatus's (status, message) for each object."""
    binary = binaries_dir() / "kstatus"
    if not binary.exists():
        pytest.fail(f"{binary} is not built: run `make cluster` (needs Go)", pytrace=False)
    done = subprocess.run(
        [str(binary)],
        input="".join(json.dumps(o) + "\n" for o in objects),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert all("error" not in a for a in answers), answers
    return [(a["status"], a["message"]) for a in answers]


def test_kstatus_says_what_docs_status_promises_for_every_status_the_controller_writes() -> None:
    tests = model_deployment_tests()

    answers = dict(zip([t.case for t in tests], kstatus([t.obj() for t in tests]), strict=True))

    assert answers == EXPECTED
    assert {case: status for case, (status, _) in answers.items()} == {
        case: flux for case, (flux, _) in documented().items()
    }


def test_kstatus_and_runways_argo_cd_script_agree_on_every_status() -> None:
    tests = model_deployment_tests()

    answers = kstatus([t.obj() for t in tests])

    assert {t.case: ARGO_FOR[status] for t, (status, _) in zip(tests, answers, strict=True)} == {
        t.case: t.status for t in tests
    }


def test_kstatus_calls_a_model_current_only_while_it_serves() -> None:
    tests = model_deployment_tests()

    answers = kstatus([t.obj() for t in tests])

    current = sorted(
        t.case for t, (status, _) in zip(tests, answers, strict=True) if status == "Current"
    )
    assert current == ["running", "running-gateway-accepted"]


def test_an_inference_provider_config_is_current_ready_or_not() -> None:
    (config,) = [
        c
        for c in bundled_config_objects()
        if HEALTH_ANNOTATION in c["metadata"].get("annotations", {})
        and c["metadata"]["name"] == "kaito"
    ]
    stored = {**config, "metadata": {**config["metadata"], "generation": 1}}
    spec = health_spec(stored["metadata"]["annotations"])
    assert not isinstance(spec, str)
    everything = Observed(
        {c.name: (c.version,) for c in spec.crds}, dict.fromkeys(pod_checks([spec]), 1)
    )
    written = {
        ready: {
            **stored,
            "status": provider_status(stored, seen, now="t", version="v", upstream="u"),
        }
        for ready, seen in ((True, everything), (False, Observed({}, {})))
    }
    assert {ready: obj["status"]["ready"] for ready, obj in written.items()} == {
        True: True,
        False: False,
    }

    answers = kstatus([written[True], written[False]])

    assert answers == [("Current", "Resource is current")] * 2
