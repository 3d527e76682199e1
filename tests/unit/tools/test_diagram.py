"""The README's flow diagram: docs/images/flow.svg is what `python -m tools.diagram` draws from
docs/images/flow.txt, and a source line that does not describe a diagram is refused by line.
(tests/ui/test_flow_diagram.py opens the SVG in the browser.)"""

from __future__ import annotations

import pytest

from tools import diagram


def test_the_committed_svg_is_drawn_from_its_source_byte_for_byte() -> None:
    drawn = diagram.generate().encode()
    assert diagram.OUTPUT.read_bytes() == drawn, (
        "docs/images/flow.svg differs from docs/images/flow.txt: run `python -m tools.diagram`"
    )


def test_the_check_mode_says_the_svg_is_up_to_date() -> None:
    assert diagram.main(["--check"]) == 0


def test_the_source_parses_into_its_boxes_and_arrows() -> None:
    drawn = diagram.parse(diagram.SOURCE.read_text())
    assert [(b.name, b.column, b.row) for b in drawn.boxes] == [
        ("git", 0, 0),
        ("admission", 1, 0),
        ("render", 2, 0),
        ("gitops", 3, 0),
        ("ui", 0, 1),
        ("status", 2, 1),
        ("cluster", 3, 1),
        ("gateway", 3, 2),
    ]
    assert [(a.source, a.target) for a in drawn.arrows] == [
        ("git", "admission"),
        ("admission", "render"),
        ("render", "gitops"),
        ("gitops", "cluster"),
        ("cluster", "status"),
        ("status", "ui"),
        ("ui", "git"),
        ("cluster", "gateway"),
    ]


def test_a_small_diagram_is_drawn_exactly() -> None:
    source = "title A & B\nbox a 0 0 A | first\nbox b 1 0 B\narrow a -> b : to <b>\n"
    font = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
    assert diagram.draw(diagram.parse(source)) == "\n".join(
        [
            '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="688" height="112"'
            ' viewBox="0 0 688 112" role="img" aria-labelledby="flow-title flow-desc">',
            '  <title id="flow-title">A &amp; B</title>',
            '  <desc id="flow-desc">A to B (to &lt;b&gt;)</desc>',
            "  <defs>",
            '    <marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7"'
            ' markerHeight="7" orient="auto">',
            '      <path d="M0,0 L10,5 L0,10 z" fill="#1f2933"/>',
            "    </marker>",
            "  </defs>",
            '  <rect x="0" y="0" width="688" height="112" fill="#ffffff"/>',
            '  <line x1="224" y1="56" x2="344" y2="56" stroke="#1f2933" stroke-width="2"'
            ' marker-end="url(#head)"/>',
            f'  <text x="284" y="48" {font} font-size="12" fill="#1f2933"'
            ' text-anchor="middle">to &lt;b&gt;</text>',
            '  <rect x="24" y="24" width="200" height="64" rx="8" fill="#eaf2fb"'
            ' stroke="#2f5d8a" stroke-width="2"/>',
            f'  <text x="124" y="52" {font} font-size="15" font-weight="bold" fill="#1f2933"'
            ' text-anchor="middle">A</text>',
            f'  <text x="124" y="72" {font} font-size="12" fill="#3e4c59"'
            ' text-anchor="middle">first</text>',
            '  <rect x="344" y="24" width="200" height="64" rx="8" fill="#eaf2fb"'
            ' stroke="#2f5d8a" stroke-width="2"/>',
            f'  <text x="444" y="62" {font} font-size="15" font-weight="bold" fill="#1f2933"'
            ' text-anchor="middle">B</text>',
            "</svg>",
            "",
        ]
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("title T\nbox a 0 0 A\nbox a 1 0 B\n", "f.txt:3: box 'a' is already defined"),
        ("title T\nbox a 0 0 A\nbox b 0 0 B\n", "f.txt:3: box 'b' is in cell (0, 0), as 'a'"),
        ("title T\nbox a 0 0 A\narrow a -> c\n", "f.txt:3: no box 'c' defined above this arrow"),
        ("title T\nbox a 0 0 A\narrow a -> a\n", "f.txt:3: an arrow from 'a' to itself"),
        (
            "title T\n# a comment\nbox a zero 0 A\n",
            "f.txt:3: not a title, box or arrow line: 'box a zero 0 A'",
        ),
        ("box a 0 0 A\n", "f.txt: no title line (screen readers read it)"),
    ],
)
def test_a_line_that_does_not_describe_a_diagram_is_refused_by_line(
    source: str, message: str
) -> None:
    with pytest.raises(diagram.DiagramError) as refused:
        diagram.parse(source, "f.txt")
    assert str(refused.value) == message
