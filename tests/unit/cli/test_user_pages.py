"""The user's pages speak to the user: no note about who on the team owns what."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT

# How a note to the team reads: who owns a module, who merges, what another session does.
TEAM_NOTE = re.compile(r"\b(?:engineer|integrator)(?:'s|s)?\b|\bits module is\b", re.IGNORECASE)

PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_a_user_page_holds_no_note_to_the_team(page: Path) -> None:
    notes = [
        f"{number}: {line}"
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if TEAM_NOTE.search(line)
    ]
    assert notes == []
