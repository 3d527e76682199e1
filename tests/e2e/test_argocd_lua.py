"""Runway's Argo CD health checks under Argo CD's own test, TestLuaHealthScript
(util/lua/health_test.go at ARGOCD_VERSION), unchanged: tests/cluster/argolua.py builds it over a
copy of the pinned Argo CD module whose resource_customizations holds Runway's checks
(kustomize/argocd/resource_customizations) and nothing else. `make cluster` compiles it once;
here it compiles the embedded checks, links and runs, offline. A failed build fails the tier."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cluster import argolua
from tests.support.health import CUSTOMIZATIONS, health_tests


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build tree, the module copied once for the file."""
    if shutil.which("go") is None:
        pytest.fail("Go is not installed: Argo CD's Lua test cannot be built", pytrace=False)
    return tmp_path_factory.mktemp("argolua")


def test_argo_cds_own_health_test_passes_every_test_of_runways_checks(workdir: Path) -> None:
    outcome = argolua.run(argolua.assemble(workdir))

    assert outcome.code == 0, outcome.output[-6000:]
    assert outcome.results == {t.name: "pass" for t in health_tests()}
    assert len(outcome.results) == len(health_tests()) > 20


def test_a_wrong_expected_status_fails_argo_cds_test(workdir: Path, tmp_path: Path) -> None:
    checks = tmp_path / "resource_customizations"
    shutil.copytree(CUSTOMIZATIONS, checks)
    tests = checks / "airunway.ai" / "ModelDeployment" / "health_test.yaml"
    right = '    status: Healthy\n    message: "Deployment/m: all 1 replicas are ready"\n  inputPath: testdata/running.yaml\n'
    assert right in tests.read_text()
    tests.write_text(tests.read_text().replace(right, right.replace("Healthy", "Degraded")))

    outcome = argolua.run(argolua.assemble(workdir, checks))

    wrong = "airunway.ai/ModelDeployment/testdata/running.yaml"
    assert outcome.code == 1
    assert outcome.results == {
        t.name: "fail" if t.name == wrong else "pass" for t in health_tests()
    }
    assert 'expected: &health.HealthStatus{Status:"Degraded"' in outcome.output
    assert 'actual  : &health.HealthStatus{Status:"Healthy"' in outcome.output
