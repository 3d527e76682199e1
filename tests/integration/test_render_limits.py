"""`runway render` with numbers past Kubernetes' limits and credentials by value: that object is
reported and skipped, the others are rendered (issue #13, classes 2 and 10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.main import main
from kubeio.yamlio import dump
from tests.support.builders import model_deployment
from tests.support.paths import EXAMPLES


def test_out_of_range_and_secret_values_are_reported_and_the_rest_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    shutil.copy(EXAMPLES / "vllm-multi-gpu.yaml", sources / "good.yaml")
    huge = model_deployment(
        "huge", "models", gpu=1, resources={"gpu": {"count": 1}, "memory": "1e1000000"}
    )
    (sources / "huge.yaml").write_text(dump(huge))
    wide = model_deployment("wide", "models", gpu=1, scaling={"replicas": 2**64})
    (sources / "wide.yaml").write_text(dump(wide))
    token = model_deployment(
        "token", "models", gpu=1, secrets={"huggingFaceToken": "hf_" + "a1" * 17}
    )
    (sources / "token.yaml").write_text(dump(token))

    code = main(
        [
            "render",
            str(sources),
            "--repo",
            str(tmp_path / "gitops"),
            "-o",
            "json",
        ]
    )

    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {r["name"]: (r["rendered"], r["error"]) for r in report["results"]} == {
        "llama-70b": (True, None),
        "huge": (
            False,
            "spec.resources.memory: Invalid value: out of range: a quantity must be at most 2^63-1 (9223372036854775807) in magnitude",
        ),
        "wide": (
            False,
            "spec.scaling.replicas: Invalid value: integer out of range (Kubernetes integers are 64-bit: -2^63 to 2^63-1)",
        ),
        "token": (
            False,
            "spec.secrets.huggingFaceToken: Invalid value: must be the name of a Secret (lowercase letters, digits, '-' and '.', at most 253 characters), not the credential itself; store the value in a Secret and put its name here",
        ),
    }
