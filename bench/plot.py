"""A small SVG line-chart writer for the benches (no plotting dependency): panels stacked one
above the other over one shared x axis, each with its own y axis, labels and legend. The text
depends only on what it is given (coordinates rounded to 0.1 px, ticks from the data's range),
so the same samples always give the same file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

WIDTH = 900
PANEL_HEIGHT = 220
LEFT, RIGHT, TOP, GAP, BOTTOM = 80, 170, 50, 50, 50
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: tuple[tuple[float, float], ...]  # (x, y), x ascending


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    y_label: str
    series: tuple[Series, ...]
    target: float | None = None  # drawn as a dashed line, named in the legend


def ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if not math.isfinite(low) or not math.isfinite(high):
        raise ValueError(f"ticks: the range [{low}, {high}] is not finite")
    if high - low <= 1e-9 * max(1.0, abs(low), abs(high)):  # one value: a unit around it
        high = low + 1
    raw = (high - low) / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    digits = max(-math.floor(math.log10(step)), 0) + 1
    first = math.floor(low / step) * step
    if first > low:  # low / step underflowed to 0 (a subnormal low)
        first -= step
    count = math.ceil((high - first) / step) + 1
    return [round(first + i * step, digits) for i in range(count)]


def _number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.10g}"


def _px(value: float) -> str:
    return f"{value:.1f}"


def render(title: str, x_label: str, panels: Sequence[Panel]) -> str:
    """The SVG text of `panels` under `title`, every panel over the same x range."""
    xs = [x for p in panels for s in p.series for x, _ in s.points]
    x_ticks = ticks(min(xs, default=0.0), max(xs, default=1.0))
    x_low, x_high = x_ticks[0], x_ticks[-1]
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + len(panels) * (PANEL_HEIGHT + GAP) + BOTTOM - GAP
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH // 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]

    def x_of(x: float) -> float:
        return LEFT + (x - x_low) / (x_high - x_low) * plot_w

    for index, panel in enumerate(panels):
        top = TOP + index * (PANEL_HEIGHT + GAP)
        ys = [y for s in panel.series for _, y in s.points]
        if panel.target is not None:
            ys.append(panel.target)
        y_ticks = ticks(min(0.0, *ys) if ys else 0.0, max(ys, default=1.0))
        y_low, y_high = y_ticks[0], y_ticks[-1]

        def y_of(y: float, top: float = top, low: float = y_low, high: float = y_high) -> float:
            return top + PANEL_HEIGHT - (y - low) / (high - low) * PANEL_HEIGHT

        out.append(
            f'<text x="{LEFT}" y="{top - 8}" font-size="13">{escape(panel.title)}</text>'
            f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_HEIGHT}" '
            'fill="none" stroke="#444"/>'
        )
        for y in y_ticks:
            py = _px(y_of(y))
            out.append(
                f'<line x1="{LEFT}" y1="{py}" x2="{LEFT + plot_w}" y2="{py}" stroke="#ddd"/>'
                f'<text x="{LEFT - 6}" y="{py}" text-anchor="end" dominant-baseline="middle">'
                f"{_number(y)}</text>"
            )
        for x in x_ticks:
            px = _px(x_of(x))
            out.append(
                f'<line x1="{px}" y1="{top}" x2="{px}" y2="{top + PANEL_HEIGHT}" stroke="#eee"/>'
                f'<text x="{px}" y="{top + PANEL_HEIGHT + 15}" text-anchor="middle">'
                f"{_number(x)}</text>"
            )
        middle = top + PANEL_HEIGHT / 2
        out.append(
            f'<text x="18" y="{_px(middle)}" text-anchor="middle" '
            f'transform="rotate(-90 18 {_px(middle)})">{escape(panel.y_label)}</text>'
        )
        for number, series in enumerate(panel.series):
            colour = COLOURS[number % len(COLOURS)]
            if series.points:
                path = " ".join(f"{_px(x_of(x))},{_px(y_of(y))}" for x, y in series.points)
                out.append(
                    f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
                )
            ly = top + 14 + number * 16
            lx = LEFT + plot_w + 12
            out.append(
                f'<line x1="{lx}" y1="{ly}" x2="{lx + 18}" y2="{ly}" stroke="{colour}" '
                f'stroke-width="3"/><text x="{lx + 24}" y="{ly}" dominant-baseline="middle">'
                f"{escape(series.name)}</text>"
            )
        if panel.target is not None:
            ty, ly = _px(y_of(panel.target)), top + 14 + len(panel.series) * 16
            lx = LEFT + plot_w + 12
            out.append(
                f'<line x1="{LEFT}" y1="{ty}" x2="{LEFT + plot_w}" y2="{ty}" stroke="#000" '
                f'stroke-dasharray="6 4"/><line x1="{lx}" y1="{ly}" x2="{lx + 18}" y2="{ly}" '
                f'stroke="#000" stroke-dasharray="6 4"/><text x="{lx + 24}" y="{ly}" '
                f'dominant-baseline="middle">target {_number(panel.target)}</text>'
            )
    out.append(
        f'<text x="{LEFT + plot_w // 2}" y="{height - 12}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"
