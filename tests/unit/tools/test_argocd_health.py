"""`python -m tools.argocd_health`: the deployed argocd-cm-health.yaml is every health.lua of
Argo CD's layout (kustomize/argocd/resource_customizations), and the ModelDeployment testdata are
what the status controller writes, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tools import argocd_health


def test_the_configmap_and_the_testdata_are_generated_from_their_source() -> None:
    stale = argocd_health.stale(argocd_health.generated())

    assert stale == [], "out of date: run `python -m tools.argocd_health`"
    assert argocd_health.main(["--check"]) == 0


def test_the_configmap_holds_each_script_unchanged_under_its_argocd_cm_key() -> None:
    data = yaml.safe_load(argocd_health.CONFIGMAP.read_text())["data"]

    assert data == {
        f"resource.customizations.health.{p.parent.parent.name}_{p.parent.name}": p.read_text()
        for p in argocd_health.CUSTOMIZATIONS.glob("*/*/health.lua")
    }


@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The source and the generated files in a scratch folder, the tool pointed at it."""
    argocd = tmp_path / "kustomize" / "argocd"
    shutil.copytree(argocd_health.ARGOCD, argocd)
    customizations = argocd / "resource_customizations"
    monkeypatch.setattr(argocd_health, "ROOT", tmp_path)
    monkeypatch.setattr(argocd_health, "CUSTOMIZATIONS", customizations)
    monkeypatch.setattr(argocd_health, "CONFIGMAP", argocd / "argocd-cm-health.yaml")
    monkeypatch.setattr(
        argocd_health, "MODEL_DEPLOYMENT", customizations / "airunway.ai" / "ModelDeployment"
    )
    return argocd


def test_a_changed_script_or_testdata_is_reported_then_regenerated(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = copy / "resource_customizations" / "ray.io" / "RayService" / "health.lua"
    script.write_text(script.read_text().replace("waiting for the RayService", "waiting"))
    running = copy / "resource_customizations/airunway.ai/ModelDeployment/testdata/running.yaml"
    running.write_text(running.read_text().replace("phase: Running", "phase: Pending"))
    stray = running.with_name("stray.yaml")
    stray.write_text("{}\n")

    assert argocd_health.main(["--check"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "kustomize/argocd/argocd-cm-health.yaml: out of date; run `python -m tools.argocd_health`",
        f"{running.relative_to(copy.parents[1])}: out of date; run `python -m tools.argocd_health`",
        f"{stray.relative_to(copy.parents[1])}: out of date; run `python -m tools.argocd_health`",
    ]

    assert argocd_health.main([]) == 0
    assert argocd_health.main(["--check"]) == 0
    assert not stray.exists()
    assert (
        '    hs = {status = "Progressing", message = "waiting"}'
        in (copy / "argocd-cm-health.yaml").read_text().splitlines()
    )
