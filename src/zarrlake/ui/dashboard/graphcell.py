"""The graph column of the History table: one small SVG per row, drawn from the engine's
layout (``repo.graph``: a lane per commit and the segments to the next row), so each dot sits
in its own table row and lines continue across rows. Our markup only, no user text."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["COLORS", "ROW_HEIGHT", "column_width", "row_svg"]

ROW_HEIGHT = 28  # px; the table's rows have exactly this height
LANE = 14  # px between lanes
PAD = 8  # px left and right of the lanes
MAX_WIDTH = 200  # px: beyond this, lanes are drawn closer together
RADIUS = 4.5
# one colour per lane, readable on light and dark backgrounds (lane 0 is main's first parents)
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#e377c2", "#ff7f0e", "#17becf", "#8c564b")

Edge = tuple[int, int]


def column_width(lanes: int) -> int:
    """The graph column's width in px for a graph of ``lanes`` lanes (bounded)."""
    return min(MAX_WIDTH, 2 * PAD + LANE * max(lanes - 1, 0) + 2)


def _x(lane: int, lanes: int) -> float:
    step = LANE if lanes <= 1 else min(LANE, (MAX_WIDTH - 2 * PAD - 2) / (lanes - 1))
    return PAD + 1 + lane * step


def _color(lane: int) -> str:
    return COLORS[lane % len(COLORS)]


def row_svg(
    lane: int,
    above: Sequence[Edge],
    below: Sequence[Edge],
    lanes: int,
    merge: bool = False,
    chosen: bool = False,
) -> str:
    """The SVG of one row: the halves of the segments from the row above (``above``: the
    previous row's edges) and to the row below (``below``: this row's edges), and the dot.

    A segment from lane ``a`` in one row to lane ``b`` in the next runs straight between the
    two dots' centres; each row draws the half inside it, so the halves meet at the border.
    """
    h = ROW_HEIGHT
    mid = h / 2
    w = column_width(lanes)
    lines = []
    for a, b in above:
        x0, x1 = _x(a, lanes), _x(b, lanes)
        lines.append((x0, -mid, x1, mid, _color(b if a != b else a)))
    for a, b in below:
        x0, x1 = _x(a, lanes), _x(b, lanes)
        lines.append((x0, mid, x1, h + mid, _color(a if b == a else max(a, b))))
    parts = [
        f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{c}" '
        'stroke-width="2"/>'
        for x0, y0, x1, y1, c in lines
    ]
    cx, c = _x(lane, lanes), _color(lane)
    r = RADIUS + (1 if chosen else 0)
    fill = "var(--zl-graph-bg, #fff)" if merge else c
    parts.append(
        f'<circle class="zl-dot" cx="{cx:.1f}" cy="{mid:.1f}" r="{r}" fill="{fill}" '
        f'stroke="{c}" stroke-width="{3 if chosen else 2}"/>'
    )
    return (
        f'<svg class="zl-graph-cell" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'style="display:block;overflow:hidden">{"".join(parts)}</svg>'
    )
