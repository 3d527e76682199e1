"""`validate` and `render` agree on spec.gateway.enabled (issue #45 item 18): `render` refuses
such a ModelDeployment without --gateway, so `validate` takes --gateway as render does, and
without it allows the object (the webhook allows it) with a warning naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.exits import Exit
from cli.inspect import NEEDS_GATEWAY
from cli.main import main
from tests.support.paths import EXAMPLES

SOURCE = str(EXAMPLES / "llmd-explicit.yaml")
ALLOWED = "models/mistral-llmd: allowed: engine vllm (explicit), provider llmd (explicit)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    out, err = capsys.readouterr()
    return code, out, err


def test_without_gateway_validate_warns_what_render_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    validated = run(capsys, "validate", SOURCE)
    rendered = run(capsys, "render", SOURCE, "--repo", str(tmp_path / "gitops"))

    assert validated == (
        Exit.OK,
        f"{ALLOWED}\n  warning: {NEEDS_GATEWAY}\n1 allowed, 0 denied\n",
        "",
    )
    assert NEEDS_GATEWAY == (
        "spec.gateway.enabled: `runway render` refuses this object without --gateway "
        "NAMESPACE/NAME (the Gateway its HTTPRoute attaches to); give validate the --gateway "
        "render will have"
    )
    assert rendered[0] == Exit.PARTIAL
    assert rendered[1].splitlines()[0] == (
        "models/mistral-llmd: not rendered (previous output kept): spec.gateway.enabled: "
        "rendering gateway objects needs the Gateway routes attach to: pass --gateway "
        "NAMESPACE/NAME"
    )


def test_with_gateway_validate_and_render_both_take_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = ["--gateway", "gateways/inference"]

    validated = run(capsys, "validate", SOURCE, *gateway)
    rendered = run(capsys, "render", SOURCE, "--repo", str(tmp_path / "gitops"), *gateway)

    assert validated == (Exit.OK, f"{ALLOWED}\n1 allowed, 0 denied\n", "")
    assert rendered[0] == Exit.OK


@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_malformed_gateway_is_the_same_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = ["--repo", str(tmp_path / "gitops")] if command == "render" else []

    assert run(capsys, command, SOURCE, *repo, "--gateway", "inference") == (
        Exit.USAGE,
        "",
        "runway: --gateway: expected NAMESPACE/NAME, got 'inference'\n",
    )


def test_a_model_without_the_gateway_needs_no_gateway(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(EXAMPLES / "vllm-1gpu.yaml"))

    assert (code, "warning" in out) == (Exit.OK, False)
