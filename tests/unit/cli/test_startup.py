"""Commands that never talk to a cluster import neither the kubernetes client nor the server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("kubernetes", "gunicorn", "flask", "dulwich", "kubernetes_validate")


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "examples/vllm-1gpu.yaml"],
        ["explain", "examples/vllm-1gpu.yaml"],
    ],
    ids=["validate", "explain"],
)
def test_offline_commands_do_not_import_cluster_or_server_modules(argv: list[str]) -> None:
    probe = (
        "import json, sys\n"
        "from cli.main import main\n"
        f"code = main({argv!r})\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert json.loads(done.stdout.splitlines()[-1]) == [0, []]


def test_a_cluster_command_still_finds_its_modules() -> None:
    probe = (
        "import json, sys\n"
        "from cli.main import build_parser\n"
        "build_parser('serve')\n"
        "print(json.dumps('kubernetes' in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert json.loads(done.stdout.splitlines()[-1]) is True
