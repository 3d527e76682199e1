"""`runway --version` is `runway version` (issue #45 item 11)."""

from __future__ import annotations

import pytest

from cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["-v", "--version"],
        ["--context", "kind-a", "--version"],
        ["--version", "validate", "no-such-file.yaml"],
    ],
    ids=["alone", "after-verbose", "after-context", "before-a-command"],
)
def test_version_flag_prints_what_the_version_command_prints(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    expected = run(capsys, "version")

    assert run(capsys, *argv) == expected
    assert (expected[0], expected[1].splitlines()[0][:7], expected[2]) == (0, "runway ", "")


def test_version_after_a_command_is_that_command_s_unknown_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--version"])

    assert (exited.value.code, capsys.readouterr().err.splitlines()[-1]) == (
        2,
        "runway validate: error: unrecognized arguments: --version",
    )
