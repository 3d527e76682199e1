"""docs/cli.md documents the one exit-code table once, as cli/exits.py defines it."""

from __future__ import annotations

import re

from cli.exits import Exit
from tests.support.paths import ROOT


def test_the_cli_reference_lists_every_exit_code_once_with_its_name() -> None:
    readme = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", readme, re.M)

    assert rows == [(str(int(code)), code.name) for code in Exit]
    assert readme.count("## Exit status") == 1
