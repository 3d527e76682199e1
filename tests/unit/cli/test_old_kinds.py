"""`validate --old FILE` follows the one rule of kinds (issue #45 item 3): a misspelled kind of
Runway's own group there was never matched to anything, so the UPDATE rules silently did not
apply and validate exited 0; `render` refuses the same file. Now both refuse it, with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from kubeio.yamlio import dump
from tests.support.builders import model_deployment
from tests.support.paths import EXAMPLES


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_misspelled_kind_in_old_is_refused_as_render_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.yaml"
    new.write_text(dump(model_deployment()))
    old = tmp_path / "old.yaml"
    old.write_text(dump({**model_deployment(), "kind": "ModelDeploymnet"}))
    refusal = (
        f"runway: {old} (document 1): ModelDeploymnet is not a kind of airunway.ai (it has "
        "ModelDeployment, InferenceProviderConfig); did you mean airunway.ai/v1alpha1 "
        "ModelDeployment?\n"
    )

    validated = run(capsys, "validate", str(new), "--old", str(old))
    rendered = run(capsys, "render", str(old), "--repo", str(tmp_path / "repo"))

    assert validated == (Exit.USAGE, "", refusal)
    assert rendered == (Exit.USAGE, "", refusal)
    assert not (tmp_path / "repo").exists()


def test_another_groups_kind_in_old_is_still_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))

    code, out, err = run(capsys, "validate", str(EXAMPLES / "vllm-1gpu.yaml"), "--old", str(old))

    assert (code, out, err) == (
        Exit.OK,
        "models/qwen-7b: allowed: engine vllm (auto), provider dynamo (auto)\n1 allowed, 0 denied\n",
        "",
    )
