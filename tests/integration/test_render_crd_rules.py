"""The render's strict check runs the CRD validation rules of the schema pack: an object that
breaks one is refused with the rule's field path and message, and the others still render."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from tests.support.builders import model_deployment
from tests.support.paths import EXAMPLES


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["render", *argv, "--gateway", "gateways/inference", "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_rendered_object_breaking_a_crd_rule_is_refused_and_the_others_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    shutil.copy(EXAMPLES / "vllm-multi-gpu.yaml", sources / "vllm-multi-gpu.yaml")
    # The DynamoGraphDeployment CRD's rule: sharedMemory.size must not be set when disabled.
    shared = {"disabled": True, "size": "1Gi"}
    broken = model_deployment(
        "qwen",
        "models",
        model_id="Qwen/Qwen2.5-7B-Instruct",
        gpu=1,
        engine="vllm",
        provider="dynamo",
        overrides={"spec": {"services": {"VllmWorker": {"sharedMemory": shared}}}},
    )
    (sources / "qwen.yaml").write_text(yaml.safe_dump(broken))
    repo = tmp_path / "gitops"

    code, report = render(capsys, str(sources), "--repo", str(repo), "--commit")

    by_name = {r["name"]: r for r in report["results"]}
    assert code == 1
    assert by_name["qwen"]["rendered"] is False
    assert by_name["qwen"]["error"] == (
        "IncompatibleUpstream: spec.services[VllmWorker].sharedMemory: DynamoGraphDeployment/qwen "
        "(nvidia.com/v1alpha1, schema from schema pack dynamographdeployments.nvidia.com.json "
        "(Dynamo main@01a4b6d6d, for 1.1.1)): spec.services[VllmWorker].sharedMemory: Invalid value: "
        "sharedMemory.size must not be set when sharedMemory.disabled is true"
    )
    assert not (repo / "rendered/models/qwen").exists()
    assert [n for n, r in sorted(by_name.items()) if r["rendered"]] == ["llama-70b"]
