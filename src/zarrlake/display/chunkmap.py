"""The chunk map of one array's changes: the two chunk axes along which the change varies,
drawn as a grid of cells, with the axes named after the array's dimensions and each cell
labelled in coordinates (dates, latitudes) when they are known.

An array of more than two chunk axes is drawn on the two along which the changed chunks
differ most (a time series whose change spans two months is drawn along time, not folded
into one square); the other axes are folded in, and the caption says so. A cell holding a
chunk whose new content is a virtual reference (bytes read from an external file) is
crossed by a diagonal stroke and says so in its tooltip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import ceil
from typing import TYPE_CHECKING, Any

from zarrlake.display._base import esc

if TYPE_CHECKING:
    from zarrlake.display._protocols import DiffLike, NodeDiffLike

__all__ = ["ChunkAxes", "chunk_axes", "chunk_map_svg", "chunk_map_text"]

MAP_COLS, MAP_ROWS = 48, 16  # the chunk map's size cap in cells
MAP_MAPS = 20  # arrays that get a chunk map
CELL, CELL_MAX = 9, 20  # px per cell: small grids get bigger cells, up to MAP_PX across
MAP_PX = 240
SYMBOLS = {"added": "+", "changed": "~", "removed": "-", "mixed": "*"}


@dataclass(frozen=True)
class ChunkAxes:
    """What a map needs to know of an array beyond the diff: its chunk grid, the names of
    its dimensions, and, per axis, a label for each chunk index (its coordinate range)."""

    grid: tuple[int, ...]
    dims: tuple[str | None, ...] = ()
    labels: Mapping[int, Sequence[str]] = field(default_factory=dict)


Grid = tuple[int, ...] | ChunkAxes
Marks = list[tuple[tuple[int, ...], str]]


def _marks(n: NodeDiffLike) -> Marks:
    return [
        (c, status)
        for status, coords in (
            ("added", n.chunks_added),
            ("changed", n.chunks_changed),
            ("removed", n.chunks_removed),
        )
        for c in coords
    ]


def _axes_info(n: NodeDiffLike, given: Grid | None) -> ChunkAxes | None:
    """The caller's grid (a shape or :class:`ChunkAxes`), else the layout the diff carries."""
    if isinstance(given, ChunkAxes):
        return given
    layout = getattr(n, "layout", None)
    dims: tuple[str | None, ...] = tuple(layout.dims) if layout is not None else ()
    if given is not None:
        return ChunkAxes(tuple(given), dims if len(dims) == len(given) else ())
    if layout is not None:
        return ChunkAxes(tuple(layout.grid_shape), dims)
    return None


def choose_axes(marks: Marks, grid: Sequence[int] | None) -> tuple[int | None, int | None]:
    """The (row, column) chunk axes to draw: the two along which the changed chunks take the
    most distinct positions (then the longest), in the array's axis order; ``None`` for a
    missing one (1-D and scalar arrays)."""
    ndim = len(marks[0][0])
    if ndim == 0:
        return None, None
    if ndim == 1:
        return None, 0
    distinct = [len({c[a] for c, _ in marks}) for a in range(ndim)]
    extent = [
        max(grid[a] if grid and len(grid) == ndim else 0, max(c[a] for c, _ in marks) + 1)
        for a in range(ndim)
    ]
    ranked = sorted(range(ndim), key=lambda a: (distinct[a], extent[a], a), reverse=True)
    rows, cols = sorted(ranked[:2])
    if extent[cols] < extent[rows] and (extent[rows] > MAP_ROWS or extent[cols] == 1):
        rows, cols = cols, rows  # a long axis reads better across than down
    return (None if extent[rows] == 1 else rows), cols


@dataclass(frozen=True)
class _Map:
    rows: int
    cols: int
    step_r: int
    step_c: int
    axis_r: int | None
    axis_c: int | None
    cells: dict[tuple[int, int], str]
    ndim: int
    info: ChunkAxes | None
    fixed: dict[int, int]  # folded axis -> the one chunk position every change has on it
    virtual: frozenset[tuple[int, int]] = frozenset()  # cells holding a virtual reference


def _layout(n: NodeDiffLike, given: Grid | None) -> _Map | None:
    marks = _marks(n)
    if not marks:
        return None
    info = _axes_info(n, given)
    ndim = len(marks[0][0])
    grid = info.grid if info is not None and len(info.grid) == ndim else None
    ar, ac = choose_axes(marks, grid)

    def pos(c: tuple[int, ...], axis: int | None) -> int:
        return 0 if axis is None else c[axis]

    def extent(axis: int | None) -> int:
        if axis is None:
            return 1
        top = max(c[axis] for c, _ in marks) + 1
        return max(top, grid[axis]) if grid else top

    er, ec = extent(ar), extent(ac)
    step_r, step_c = ceil(er / MAP_ROWS), ceil(ec / MAP_COLS)
    cells: dict[tuple[int, int], str] = {}
    for c, status in marks:
        key = (pos(c, ar) // step_r, pos(c, ac) // step_c)
        prev = cells.get(key)
        cells[key] = status if prev in (None, status) else "mixed"
    virtual = frozenset(
        (pos(c, ar) // step_r, pos(c, ac) // step_c) for c in n.chunks_virtual if len(c) == ndim
    )
    fixed = {
        a: marks[0][0][a]
        for a in range(ndim)
        if a not in (ar, ac) and len({c[a] for c, _ in marks}) == 1
    }
    return _Map(
        ceil(er / step_r),
        ceil(ec / step_c),
        step_r,
        step_c,
        ar,
        ac,
        cells,
        ndim,
        info,
        fixed,
        virtual,
    )


def _dim(m: _Map, axis: int) -> str:
    dims = m.info.dims if m.info is not None else ()
    name = dims[axis] if axis < len(dims) else None
    return name or f"axis {axis}"


def _span(m: _Map, axis: int | None, start: int, step: int) -> str:
    """``time 2025-03 … 2025-04`` or ``axis 1 chunks 3..5``: where a cell lies on one axis."""
    if axis is None:
        return ""
    labels = (m.info.labels.get(axis) if m.info is not None else None) or ()
    stop = start + step - 1
    if start < len(labels):
        first, last = labels[start], labels[min(stop, len(labels) - 1)]
        first = first.split(" … ")[0]
        last = last.split(" … ")[-1]
        return f"{_dim(m, axis)} {first if first == last else f'{first} … {last}'}"
    where = f"chunk {start}" if step == 1 else f"chunks {start}..{stop}"
    return f"{_dim(m, axis)} {where}"


def _labelled(m: _Map, axis: int) -> bool:
    return m.info is not None and bool(m.info.labels.get(axis))


def _caption(m: _Map) -> str:
    def whole(axis: int, cells: int, step: int) -> str:  # the axis, with its range if known
        return _span(m, axis, 0, cells * step) if _labelled(m, axis) else _dim(m, axis)

    parts = []
    if m.axis_r is not None:
        parts.append(f"rows: {whole(m.axis_r, m.rows, m.step_r)}")
    if m.axis_c is not None:
        parts.append(f"columns: {whole(m.axis_c, m.cols, m.step_c)}")
    folded = [
        _span(m, a, m.fixed[a], 1) if a in m.fixed and _labelled(m, a) else _dim(m, a)
        for a in range(m.ndim)
        if a not in (m.axis_r, m.axis_c)
    ]
    if folded:
        parts.append(f"{', '.join(folded)} folded in")
    if m.step_r > 1 or m.step_c > 1:
        parts.append(f"one cell = {m.step_r}x{m.step_c} chunks")
    named = m.info is not None and any(m.info.dims)
    return "; ".join(parts) if named or m.ndim > 2 or m.step_r > 1 or m.step_c > 1 else ""


def chunk_map_svg(n: NodeDiffLike, grid: Grid | None = None) -> str:
    """An inline SVG of the changed chunks of one array (empty string when none changed).
    ``grid``, the array's chunk grid shape or its :class:`ChunkAxes`, makes the map span the
    whole array and label it in coordinates; the diff's own layout is used without it."""
    m = _layout(n, grid)
    if m is None:
        return ""
    cell = max(CELL, min(CELL_MAX, MAP_PX // max(m.rows, m.cols)))
    w, h = m.cols * cell, m.rows * cell
    named = m.info is not None and (any(m.info.dims) or bool(m.info.labels))
    rects = [f'<rect class="zl-cell-bg" x="0" y="0" width="{w}" height="{h}"/>']
    for (r, c), status in sorted(m.cells.items()):
        where = ", ".join(
            s
            for s in (
                _span(m, m.axis_r, r * m.step_r, m.step_r),
                _span(m, m.axis_c, c * m.step_c, m.step_c),
            )
            if s
        )
        if not named and m.ndim <= 2 and m.step_r == m.step_c == 1:  # plain chunk coordinates
            where = f"chunk ({r}, {c})" if m.axis_r is not None else f"chunk ({c},)"
        virtual = (r, c) in m.virtual
        said = f"{status}, virtual reference" if virtual else status
        rects.append(
            f'<rect class="zl-{status}" x="{c * cell}" y="{r * cell}" width="{cell - 1}" '
            f'height="{cell - 1}"><title>{esc(where or "the chunk")}: {said}</title></rect>'
        )
        if virtual:  # a diagonal stroke in the text colour, readable on both themes
            x, y, s = c * cell, r * cell, cell - 1
            rects.append(
                f'<path class="zl-virtual" d="M{x} {y + s}L{x + s} {y}" stroke="currentColor" '
                f'stroke-width="1.5"><title>{esc(where or "the chunk")}: {said}</title></path>'
            )
    note = _caption(m)
    caption = f'<div class="zl-muted">{esc(note)}</div>' if note else ""
    return (
        f'<svg class="zl-map" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="changed chunks of /{esc(n.path)}">{"".join(rects)}</svg>{caption}'
    )


def chunk_map_text(n: NodeDiffLike, grid: Grid | None = None) -> list[str]:
    """The same map in characters: ``+`` added, ``~`` changed, ``-`` removed, ``*`` mixed,
    then a caption naming the axes."""
    m = _layout(n, grid)
    if m is None:
        return []
    lines = [
        "".join(SYMBOLS.get(m.cells.get((r, c), ""), ".") for c in range(m.cols))
        for r in range(m.rows)
    ]
    note = _caption(m)
    return [*lines, f"({note})"] if note else lines


# -- reading the axes of a repo's arrays -----------------------------------------------------


def _fmt(v: Any) -> str:
    import numpy as np

    if isinstance(v, np.datetime64):
        return str(np.datetime_as_string(v, unit="D"))
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}"
    return str(v)


def _chunk_labels(values: Any, size: int) -> list[str]:
    """``first … last`` of each chunk's slice of a coordinate."""
    out = []
    for start in range(0, len(values), size):
        part = values[start : start + size]
        a, b = _fmt(part[0]), _fmt(part[-1])
        out.append(a if a == b else f"{a} … {b}")
    return out


def _coordinate(store: Any, group: str, dim: str, n: int) -> Any:
    """The 1-D array named ``dim`` beside the array (an xarray coordinate), CF-decoded when
    xarray is there (times), or ``None``."""
    import numpy as np
    import zarr

    try:
        c = zarr.open_array(store, path=f"{group}/{dim}" if group else dim, mode="r")
    except Exception:  # no coordinate there: the axis is labelled by chunk index
        return None
    if c.ndim != 1 or c.shape[0] != n:
        return None
    values = np.asarray(c[:])
    try:
        import xarray as xr

        decoded = xr.decode_cf(xr.Dataset({dim: (dim, values, dict(c.attrs))}))
        return np.asarray(decoded[dim].values)
    except Exception:  # xarray missing or units it cannot decode: the raw values
        return values


def chunk_axes(repo: Any, d: DiffLike) -> dict[str, ChunkAxes]:
    """Per array with changed chunks (at most the arrays that get a map): its chunk grid,
    dimension names and coordinate labels per chunk, read with zarr at the diff's ``after``
    commit (``before`` for removed arrays). Pass it as ``grids=`` to the diff renderers."""
    import zarr

    out: dict[str, ChunkAxes] = {}
    changed = [n for n in d.nodes if n.chunks_added or n.chunks_changed or n.chunks_removed]
    for n in changed[:MAP_MAPS]:
        side = d.before if n.status == "removed" else d.after
        if not side or side == "staged":
            continue
        # Only a nicer map is at stake: an array that cannot be opened keeps the plain map.
        try:
            store = repo.readonly_session(side).store
            arr = zarr.open_array(store, path=n.path, mode="r")
            names = tuple(getattr(arr.metadata, "dimension_names", None) or ())
            dims = names if len(names) == arr.ndim else ()
            group, _, name = n.path.rpartition("/")
            labels: dict[int, list[str]] = {}
            for axis, dim in enumerate(dims):
                if dim and dim != name:
                    values = _coordinate(store, group, dim, arr.shape[axis])
                    if values is not None:
                        labels[axis] = _chunk_labels(values, arr.chunks[axis])
            out[n.path] = ChunkAxes(tuple(int(x) for x in arr.cdata_shape), dims, labels)
        except Exception:
            continue
    return out
