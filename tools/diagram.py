"""`python -m tools.diagram`: the README's flow diagram (docs/images/flow.svg) from its source,
docs/images/flow.txt: boxes on a grid and arrows between them, in a small format of our own that
the source's header describes. The SVG is the same bytes for the same source (whole numbers,
presentation attributes, no <style>: it displays under any Content-Security-Policy), so
tests/unit/tools/test_diagram.py can regenerate it and compare.

Exit status: 0 written (or up to date with --check); 1 out of date with --check; 2 a source
that does not parse (its file, line and reason are printed).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "images" / "flow.txt"
OUTPUT = ROOT / "docs" / "images" / "flow.svg"

BOX_WIDTH, BOX_HEIGHT = 200, 64
COLUMN_PITCH, ROW_PITCH = 320, 130
MARGIN = 24
LABEL_ROOM = 120  # right of the last column, for the label beside a vertical arrow there
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, BOX_FILL, BOX_STROKE, NOTE_INK = "#1f2933", "#eaf2fb", "#2f5d8a", "#3e4c59"

BOX = re.compile(r"box\s+([a-z][a-z0-9-]*)\s+(\d+)\s+(\d+)\s+([^|]+?)\s*(?:\|\s*(.+?))?\s*")
ARROW = re.compile(r"arrow\s+([a-z][a-z0-9-]*)\s*->\s*([a-z][a-z0-9-]*)\s*(?::\s*(.+?))?\s*")
TITLE = re.compile(r"title\s+(.+?)\s*")


class DiagramError(ValueError):
    """A source line that does not describe the diagram: `file:line: reason`."""


@dataclass(frozen=True, slots=True)
class Box:
    name: str
    column: int
    row: int
    title: str
    note: str

    @property
    def left(self) -> int:
        return MARGIN + self.column * COLUMN_PITCH

    @property
    def top(self) -> int:
        return MARGIN + self.row * ROW_PITCH

    @property
    def centre(self) -> tuple[float, float]:
        return self.left + BOX_WIDTH / 2, self.top + BOX_HEIGHT / 2


@dataclass(frozen=True, slots=True)
class Arrow:
    source: str
    target: str
    label: str


@dataclass(frozen=True, slots=True)
class Diagram:
    title: str
    boxes: tuple[Box, ...]
    arrows: tuple[Arrow, ...]


def parse(text: str, source: str = "flow.txt") -> Diagram:
    """The diagram `text` describes; a DiagramError naming the first line that does not."""
    title = ""
    boxes: dict[str, Box] = {}
    arrows: list[Arrow] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{source}:{number}"
        if not line or line.startswith("#"):
            continue
        if match := TITLE.fullmatch(line):
            title = match[1]
        elif match := BOX.fullmatch(line):
            box = Box(match[1], int(match[2]), int(match[3]), match[4], match[5] or "")
            _check_box(box, boxes, where)
            boxes[box.name] = box
        elif match := ARROW.fullmatch(line):
            arrow = Arrow(match[1], match[2], match[3] or "")
            _check_arrow(arrow, boxes, where)
            arrows.append(arrow)
        else:
            raise DiagramError(f"{where}: not a title, box or arrow line: {line!r}")
    if not title:
        raise DiagramError(f"{source}: no title line (screen readers read it)")
    return Diagram(title, tuple(boxes.values()), tuple(arrows))


def _check_box(box: Box, boxes: dict[str, Box], where: str) -> None:
    if box.name in boxes:
        raise DiagramError(f"{where}: box {box.name!r} is already defined")
    taken = [b.name for b in boxes.values() if (b.column, b.row) == (box.column, box.row)]
    if taken:
        raise DiagramError(
            f"{where}: box {box.name!r} is in cell ({box.column}, {box.row}), as {taken[0]!r}"
        )


def _check_arrow(arrow: Arrow, boxes: dict[str, Box], where: str) -> None:
    for end in (arrow.source, arrow.target):
        if end not in boxes:
            raise DiagramError(f"{where}: no box {end!r} defined above this arrow")
    if arrow.source == arrow.target:
        raise DiagramError(f"{where}: an arrow from {arrow.source!r} to itself")


def _edge(box: Box, towards: tuple[float, float]) -> tuple[int, int]:
    """Where the line from the box's centre to `towards` leaves the box."""
    (x, y), (tx, ty) = box.centre, towards
    dx, dy = tx - x, ty - y
    scales = [(BOX_WIDTH / 2) / abs(dx)] if dx else []
    scales += [(BOX_HEIGHT / 2) / abs(dy)] if dy else []
    scale = min(scales)
    return round(x + dx * scale), round(y + dy * scale)


def _arrow_svg(arrow: Arrow, boxes: dict[str, Box]) -> list[str]:
    source, target = boxes[arrow.source], boxes[arrow.target]
    x1, y1 = _edge(source, target.centre)
    x2, y2 = _edge(target, source.centre)
    lines = [
        f'  <line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{INK}" stroke-width="2"'
        ' marker-end="url(#head)"/>'
    ]
    if arrow.label:
        mx, my = (x1 + x2) // 2, (y1 + y2) // 2
        # Beside a vertical arrow, above any other.
        at, anchor = ((mx + 8, my + 4), "start") if x1 == x2 else ((mx, my - 8), "middle")
        lines.append(
            f'  <text x="{at[0]}" y="{at[1]}" font-family="{FONT}" font-size="12"'
            f' fill="{INK}" text-anchor="{anchor}">{escape(arrow.label)}</text>'
        )
    return lines


def _box_svg(box: Box) -> list[str]:
    x, y = box.left, box.top
    middle = x + BOX_WIDTH // 2
    lines = [
        f'  <rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="8"'
        f' fill="{BOX_FILL}" stroke="{BOX_STROKE}" stroke-width="2"/>',
        f'  <text x="{middle}" y="{y + (28 if box.note else 38)}" font-family="{FONT}"'
        f' font-size="15" font-weight="bold" fill="{INK}" text-anchor="middle">'
        f"{escape(box.title)}</text>",
    ]
    if box.note:
        lines.append(
            f'  <text x="{middle}" y="{y + 48}" font-family="{FONT}" font-size="12"'
            f' fill="{NOTE_INK}" text-anchor="middle">{escape(box.note)}</text>'
        )
    return lines


def describe(diagram: Diagram) -> str:
    """The arrows in words, for the SVG's <desc>."""
    titles = {b.name: b.title for b in diagram.boxes}
    return "; ".join(
        f"{titles[a.source]} to {titles[a.target]}" + (f" ({a.label})" if a.label else "")
        for a in diagram.arrows
    )


def draw(diagram: Diagram) -> str:
    """The SVG document of `diagram`."""
    width = 2 * MARGIN + max(b.column for b in diagram.boxes) * COLUMN_PITCH + BOX_WIDTH
    width += LABEL_ROOM
    height = 2 * MARGIN + max(b.row for b in diagram.boxes) * ROW_PITCH + BOX_HEIGHT
    boxes = {b.name: b for b in diagram.boxes}
    lines = [
        '<svg xmlns="http://www.w3.org/2000/svg" version="1.1"'
        f' width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        ' role="img" aria-labelledby="flow-title flow-desc">',
        f'  <title id="flow-title">{escape(diagram.title)}</title>',
        f'  <desc id="flow-desc">{escape(describe(diagram))}</desc>',
        "  <defs>",
        '    <marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7"'
        ' markerHeight="7" orient="auto">',
        f'      <path d="M0,0 L10,5 L0,10 z" fill="{INK}"/>',
        "    </marker>",
        "  </defs>",
        f'  <rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for arrow in diagram.arrows:
        lines += _arrow_svg(arrow, boxes)
    for box in diagram.boxes:
        lines += _box_svg(box)
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def generate(source: Path = SOURCE) -> str:
    return draw(parse(source.read_text(), str(source.relative_to(ROOT))))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diagram", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say whether the SVG is stale")
    args = parser.parse_args(argv)
    try:
        svg = generate()
    except DiagramError as error:
        print(f"tools.diagram: {error}", file=sys.stderr)
        return 2
    if args.check:
        stale = not OUTPUT.exists() or OUTPUT.read_text() != svg
        if stale:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run `python -m tools.diagram`")
        return int(stale)
    OUTPUT.write_text(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
