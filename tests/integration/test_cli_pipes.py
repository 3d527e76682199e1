"""`runway ... | head`: when the reader of standard output goes away, the command stops quietly
with 141 (128 + SIGPIPE, as git does), never a `[Errno 32] Broken pipe` line or a traceback.

The pipe's read end is closed before the command starts, so its first write fails, every time:
a real `| head` races the writer (an output smaller than the pipe's buffer may be written
whole before head exits), and the case is the same."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

RUNWAY = Path(sys.executable).parent / "runway"
EXAMPLES = sorted(glob.glob(str(ROOT / "examples" / "*.yaml")))
COMMANDS = [
    ["validate", *EXAMPLES],
    ["validate", "-o", "json", *EXAMPLES],
    ["validate", "-o", "yaml", *EXAMPLES],
    ["explain", *EXAMPLES],
    ["explain", "-o", "json", *EXAMPLES],
    ["gateway-plan", str(ROOT / "examples" / "gateway" / "openai.yaml")],
    ["version"],
    ["version", "-o", "json"],
    ["completion", "bash"],
    ["crds"],
    ["provider-configs"],
]


def closed_pipe_run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(RUNWAY), *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv", COMMANDS, ids=[" ".join(c[:3]).replace(str(ROOT), "") for c in COMMANDS]
)
def test_a_closed_pipe_ends_the_command_quietly(argv: list[str]) -> None:
    done = closed_pipe_run(argv)

    assert (done.returncode, done.stderr) == (141, "")


def test_through_a_real_head_the_status_is_the_commands_or_141_and_nothing_is_said() -> None:
    script = (
        f"set -o pipefail; {RUNWAY} validate -o json {' '.join(EXAMPLES)} | head -c 1 >/dev/null"
    )
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode in (0, 141)
    assert done.stderr == ""


def test_a_reader_that_reads_everything_changes_nothing() -> None:
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {RUNWAY} validate {' '.join(EXAMPLES)} | cat"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "16 allowed, 0 denied"
