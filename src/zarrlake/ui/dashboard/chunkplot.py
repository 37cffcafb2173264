# mypy: disallow-untyped-calls=False
"""Drawing a :class:`ChunkMap`: cells with hover details when few, an image when many.

Cells holding a virtual reference get a thick dark outline and say ``virtual reference`` in
their tooltip (an aggregated image cannot outline cells; the state line still counts them).
"""

from __future__ import annotations

import json

import holoviews as hv  # type: ignore[import-untyped]
import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]

from zarrlake.ui.dashboard.chunkmap import STATUS, VIRTUAL, ChunkMap
from zarrlake.ui.dashboard.markup import esc, html
from zarrlake.ui.dashboard.reader import ArrayInfo, coord_label
from zarrlake.ui.dashboard.words import plural

__all__ = ["COLORS", "VIRTUAL_OUTLINE", "VIRTUAL_WORDS", "chunkmap_plot", "chunkmap_state_html"]

COLORS = ["#d9d9d9", "#2ca02c", "#ff7f0e", "#d62728"]  # unchanged, added, changed, removed
VIRTUAL_OUTLINE = "#b0179e"  # outline of a virtual reference: seen on both themes
VIRTUAL_WORDS = "virtual reference"
MAX_RECTS = 4096


def _axis_label(info: ArrayInfo, axis: int | None) -> str:
    if axis is None:
        return ""
    dim = info.dims[axis]
    values = info.coords.get(dim)
    rng = f" ({coord_label(values, 0, len(values))})" if values is not None else ""
    return f"{dim} chunks{rng}"


def _range(info: ArrayInfo, axis: int | None, i0: int, i1: int) -> str:
    """What chunks ``i0..i1`` (inclusive) of ``axis`` cover, as coordinates or indices."""
    if axis is None:
        return ""
    c = info.chunks[axis]
    a, b = i0 * c, min((i1 + 1) * c, info.shape[axis])
    values = info.coords.get(info.dims[axis])
    if values is not None:
        return coord_label(values, a, b)
    return f"[{a}:{b}]"


def chunkmap_plot(m: ChunkMap, info: ArrayInfo, height: int = 480) -> hv.Element:
    n_rows, n_cols = m.cells.shape
    br, bc = m.block
    opts = {
        "xlabel": _axis_label(info, m.cols_axis),
        "ylabel": _axis_label(info, m.rows_axis),
        "height": height,
        "responsive": True,
        "title": "",
        "toolbar": "above",
    }
    if n_rows * n_cols <= MAX_RECTS:
        r, c = np.indices((n_rows, n_cols))
        r, c = r.ravel(), c.ravel()
        codes = m.cells.ravel()
        virtual = m.virtual.ravel()
        df = pd.DataFrame(
            {
                "x0": c,
                "y0": r,
                "x1": c + 1,
                "y1": r + 1,
                "status": [
                    STATUS[int(k)] + (f" · {VIRTUAL_WORDS}" if v else "")
                    for k, v in zip(codes, virtual, strict=True)
                ],
                "code": codes.astype(int),
                # colours by value, not through a colour map: a slice whose cells all have
                # one status is a constant column, which a colour map would not colour
                "fill": [COLORS[int(k)] for k in codes],
                "edge": [VIRTUAL_OUTLINE if v else "white" for v in virtual],
                "edge_width": np.where(virtual, 4.0, 0.5),
                "chunk": [_chunk_text(m, int(i), int(j)) for i, j in zip(r, c, strict=True)],
                "rows": [_range(info, m.rows_axis, int(i) * br, int(i) * br + br - 1) for i in r],
                "cols": [_range(info, m.cols_axis, int(j) * bc, int(j) * bc + bc - 1) for j in c],
            }
        )
        ticks = {
            "xticks": _ticks(info, m.cols_axis, n_cols, bc),
            "yticks": _ticks(info, m.rows_axis, n_rows, br),
        }
        return hv.Rectangles(
            df,
            ["x0", "y0", "x1", "y1"],
            ["status", "code", "chunk", "rows", "cols", "fill", "edge", "edge_width"],
        ).opts(
            color="fill",
            line_color="edge",
            line_width="edge_width",
            tools=["hover"],
            hover_tooltips=[
                ("chunk", "@chunk"),
                ("status", "@status"),
                ("rows", "@rows"),
                ("columns", "@cols"),
            ],
            colorbar=False,
            **{k: v for k, v in ticks.items() if v},
            **opts,
        )
    img = hv.Image(
        m.cells[::-1].astype(float),  # Image rows run top-down; flip so chunk row 0 is at y=0
        bounds=(0, 0, n_cols * bc, n_rows * br),
        vdims=["code"],
    )
    return img.opts(
        cmap=COLORS,
        clim=(-0.5, 3.5),
        tools=["hover"],
        hover_tooltips=[("column chunk", "$x{0}"), ("row chunk", "$y{0}")],
        colorbar=False,
        **opts,
    )


MAX_TICKS = 16


def _ticks(info: ArrayInfo, axis: int | None, n: int, block: int) -> list[tuple[float, str]]:
    """Coordinate ranges at cell centres, when there are few enough cells to read them."""
    if axis is None or n > MAX_TICKS or info.dims[axis] not in info.coords:
        return []
    return [(i + 0.5, _range(info, axis, i * block, i * block + block - 1)) for i in range(n)]


def _chunk_text(m: ChunkMap, i: int, j: int) -> str:
    br, bc = m.block
    coords: list[str] = []
    for a in range(len(m.grid)):
        if a == m.rows_axis:
            coords.append(str(i) if br == 1 else f"{i * br}-{i * br + br - 1}")
        elif a == m.cols_axis:
            coords.append(str(j) if bc == 1 else f"{j * bc}-{j * bc + bc - 1}")
        else:
            coords.append(str(m.fixed.get(a, 0)))
    return "(" + ", ".join(coords) + ")"


def chunkmap_state_html(m: ChunkMap, info: ArrayInfo) -> str:
    """The map's state as data attributes (for tests and scripts) and one readable line."""
    fixed = ", ".join(f"{info.dims[a]} chunk {i}" for a, i in sorted(m.fixed.items()))
    sc = m.slice_counts
    text = (
        f"{info.path}: grid {'x'.join(map(str, m.grid))} chunks"
        + (f"; slice {fixed}" if fixed else "")
        + f"; in this slice {sc.get('added', 0)} added, {sc.get('changed', 0)} changed, "
        f"{sc.get('removed', 0)} removed"
        + (f" ({plural(sc[VIRTUAL], VIRTUAL_WORDS)} among them)" if sc.get(VIRTUAL) else "")
        + (f"; shown in blocks of {m.block[0]}x{m.block[1]} chunks" if m.aggregated else "")
    )
    attrs = {
        "data-array": info.path,
        "data-grid": json.dumps(list(m.grid)),
        "data-fixed": json.dumps({info.dims[a]: i for a, i in m.fixed.items()}),
        "data-aggregated": "true" if m.aggregated else "false",
        **{f"data-{k}": json.dumps([list(c) for c in v]) for k, v in m.listed.items()},
        **{f"data-n-{k}": str(v) for k, v in sc.items()},
    }
    a = " ".join(f'{k}="{esc(v)}"' for k, v in attrs.items())
    return f'<div class="zl-chunkmap-state" {a}>' + html("{}</div>", text)
