"""Every module of the renderer stays small enough to read in one sitting: at most 350 lines
(the issue #42 rule for renderer/)."""

from __future__ import annotations

from tests.support.paths import ROOT

LIMIT = 350


def test_no_module_in_the_renderer_is_over_350_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "renderer").rglob("*.py"))
    }

    assert sizes
    assert {path: lines for path, lines in sizes.items() if lines > LIMIT} == {}
