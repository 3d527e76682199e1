"""Every `runway COMMAND` the docs and the Dockerfile's header name is a command `runway` has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.main import COMMANDS
from tests.support.paths import ROOT

# `runway WORD` inside backticks, across the line breaks of a wrapped comment or paragraph.
NAMED = re.compile(r"`runway\s+([a-z][a-z-]*)")


def dockerfile_header() -> str:
    """The comment block the Dockerfile opens with, its `# ` markers removed."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    header = lines[: next(i for i, line in enumerate(lines) if not line.startswith("#"))]
    return "\n".join(line.removeprefix("#").strip() for line in header)


def named_commands(text: str) -> list[str]:
    return NAMED.findall(text)


PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_command_a_doc_page_names_exists(page: Path) -> None:
    assert [c for c in named_commands(page.read_text()) if c not in COMMANDS] == []


def test_the_dockerfile_header_names_the_image_s_commands_as_runway_spells_them() -> None:
    assert named_commands(dockerfile_header()) == [
        "serve",
        "status-controller",
        "gateway-sync",
        "render",
        "gateway-sync",
    ]


def test_a_command_split_by_a_wrapped_line_is_still_read_whole() -> None:
    assert named_commands("`runway status-controller` and `runway gateway\nsync`") == [
        "status-controller",
        "gateway",
    ]
