"""The chunk map: an array's chunk grid coloured by what a diff did to each chunk.

One 2-D slice of the chunk grid at a time (two axes shown, the others fixed at a chunk
index). Grids larger than ``MAX_SIDE`` cells a side are aggregated into blocks, each block
showing the strongest change inside it, so a million-chunk grid draws as at most
``MAX_SIDE``² cells. Added or changed chunks whose new content is a virtual reference (bytes
read from an external file) are marked apart in ``virtual``, a mask over the same cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from zarrlake import NodeDiff

__all__ = [
    "ADDED",
    "CHANGED",
    "MAX_SIDE",
    "REMOVED",
    "STATUS",
    "VIRTUAL",
    "ChunkMap",
    "chunk_map",
]

ADDED, CHANGED, REMOVED = 1, 2, 3
STATUS = {0: "unchanged", ADDED: "added", CHANGED: "changed", REMOVED: "removed"}
VIRTUAL = "virtual"  # the key of virtual references in counts and listings
MAX_SIDE = 400
# Listing every marked chunk of the slice (for hover and the page's state) stops here.
MAX_LISTED = 2000


@dataclass(frozen=True)
class ChunkMap:
    """A 2-D view of the chunk grid; ``cells[r, c]`` is a status code (see ``STATUS``), and
    ``virtual[r, c]`` is true where the cell holds a chunk whose new content is a virtual
    reference. Counts and listings have a ``virtual`` key beside the statuses."""

    cells: np.ndarray
    rows_axis: int | None
    cols_axis: int | None
    fixed: dict[int, int]
    block: tuple[int, int]
    grid: tuple[int, ...]
    counts: dict[str, int]  # over the whole array
    slice_counts: dict[str, int]  # in the slice shown
    listed: dict[str, list[tuple[int, ...]]]  # chunk coords per status in the slice (capped)
    virtual: np.ndarray

    @property
    def aggregated(self) -> bool:
        return self.block != (1, 1)


def _coords(chunks: Iterable[tuple[int, ...]], ndim: int) -> np.ndarray:
    arr = np.array(list(chunks), dtype=np.int64)
    return arr.reshape(-1, ndim) if arr.size else np.empty((0, ndim), dtype=np.int64)


def chunk_map(
    node: NodeDiff | None,
    grid: tuple[int, ...],
    rows_axis: int | None = None,
    cols_axis: int | None = None,
    fixed: Mapping[int, int] | None = None,
    max_side: int = MAX_SIDE,
) -> ChunkMap:
    """The chunk map of ``node`` (a NodeDiff of an array, or None: nothing changed).

    ``rows_axis``/``cols_axis`` default to the last two axes; ``fixed`` gives the chunk index
    of every other axis (default 0).
    """
    ndim = len(grid)
    if ndim >= 2:
        cols_axis = ndim - 1 if cols_axis is None else cols_axis
        rows_axis = ndim - 2 if rows_axis is None else rows_axis
    elif ndim == 1:
        rows_axis, cols_axis = None, 0
    else:
        rows_axis = cols_axis = None
    fix = {a: int((fixed or {}).get(a, 0)) for a in range(ndim) if a not in (rows_axis, cols_axis)}
    n_rows = grid[rows_axis] if rows_axis is not None else 1
    n_cols = grid[cols_axis] if cols_axis is not None else 1
    full = np.zeros((n_rows, n_cols), dtype=np.int8)
    virtual = np.zeros((n_rows, n_cols), dtype=bool)
    counts: dict[str, int] = {}
    slice_counts: dict[str, int] = {}
    listed: dict[str, list[tuple[int, ...]]] = {}
    sets = (
        (
            (ADDED, node.chunks_added),
            (CHANGED, node.chunks_changed),
            (REMOVED, node.chunks_removed),
            (VIRTUAL, node.chunks_virtual),
        )
        if node is not None
        else ()
    )
    for code, chunks in sets:
        name = code if isinstance(code, str) else STATUS[code]
        counts[name] = len(chunks)
        c = _coords(chunks, ndim)
        keep = np.ones(len(c), dtype=bool)
        for a, i in fix.items():
            keep &= c[:, a] == i
        c = c[keep]
        # chunks beyond the grid (a shrunk array's removed chunks) are counted, not drawn
        r = c[:, rows_axis] if rows_axis is not None else np.zeros(len(c), dtype=np.int64)
        k = c[:, cols_axis] if cols_axis is not None else np.zeros(len(c), dtype=np.int64)
        inside = (r < n_rows) & (k < n_cols)
        if code == VIRTUAL:
            virtual[r[inside], k[inside]] = True
        else:
            full[r[inside], k[inside]] = np.maximum(full[r[inside], k[inside]], code)
        slice_counts[name] = len(c)
        if len(c) <= MAX_LISTED:
            listed[name] = sorted(tuple(int(x) for x in row) for row in c)
    br = max(1, -(-n_rows // max_side))
    bc = max(1, -(-n_cols // max_side))
    if (br, bc) != (1, 1):
        cells = _aggregate(full, br, bc)
        virtual = _any(virtual, br, bc)
    else:
        cells = full
    return ChunkMap(
        cells, rows_axis, cols_axis, fix, (br, bc), grid, counts, slice_counts, listed, virtual
    )


def _any(mask: np.ndarray, br: int, bc: int) -> np.ndarray:
    """Each ``br`` x ``bc`` block becomes one cell: true if any chunk inside it is."""
    r, c = mask.shape
    pad = np.zeros((-(-r // br) * br, -(-c // bc) * bc), dtype=bool)
    pad[:r, :c] = mask
    out: np.ndarray = pad.reshape(pad.shape[0] // br, br, pad.shape[1] // bc, bc).any(axis=(1, 3))
    return out


def _aggregate(full: np.ndarray, br: int, bc: int) -> np.ndarray:
    """Each ``br`` x ``bc`` block becomes one cell: its strongest status (changed > ...)."""
    # rank so that max() picks changed over removed over added over unchanged
    rank = np.array([0, 1, 3, 2], dtype=np.int8)[full]
    r, c = full.shape
    pad = np.zeros((-(-r // br) * br, -(-c // bc) * bc), dtype=np.int8)
    pad[:r, :c] = rank
    agg = pad.reshape(pad.shape[0] // br, br, pad.shape[1] // bc, bc).max(axis=(1, 3))
    unrank = np.array([0, ADDED, REMOVED, CHANGED], dtype=np.int8)
    out: np.ndarray = unrank[agg]
    return out
