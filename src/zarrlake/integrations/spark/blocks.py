"""Rows to whole chunks: group an Arrow table's rows by chunk and write each chunk once,
merged with what the chunk held before where the rows cover it only partly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import zarr

from zarrlake.errors import InvalidInputError
from zarrlake.integrations.spark.arrays import Target, array_path, fill_value

__all__ = ["ChunkCoords", "write_table"]

ChunkCoords = tuple[int, ...]


def _values(col: pa.ChunkedArray, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    if col.null_count:
        col = col.fill_null(pa.scalar(fill_value(dtype)).cast(col.type))
    return np.asarray(col.to_numpy()).astype(dtype, copy=False)


def write_table(store: Any, group: str, target: Target, table: pa.Table) -> list[ChunkCoords]:
    """Write ``table``'s rows into the arrays of ``target`` through ``store``; return the
    coordinates of the chunks written. Every chunk is written whole, in one ``set``."""
    grid = target.grid
    if table.num_rows == 0:
        return []
    idx = grid.cell_indices(table)
    cells = np.ravel_multi_index(tuple(idx), grid.shape)
    uniq, counts = np.unique(cells, return_counts=True)
    if uniq.size != cells.size:
        where = np.unravel_index(uniq[np.argmax(counts > 1)], grid.shape)
        raise InvalidInputError(
            f"{cells.size - uniq.size} row(s) repeat a cell already given by another row "
            f"(e.g. the cell at index {tuple(int(i) for i in where)}); "
            "aggregate duplicates in Spark before writing"
        )
    chunk_ids = grid.chunk_ids(idx)
    order = np.argsort(chunk_ids, kind="stable")
    sorted_ids = chunk_ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    ends = np.r_[starts[1:], sorted_ids.size]
    arrays = {
        name: zarr.open_array(store, path=array_path(group, name), mode="r+")
        for name in target.arrays.values()
    }
    values = {
        name: _values(table.column(col), np.dtype(target.dtypes[name]))
        for col, name in target.arrays.items()
    }
    written: list[ChunkCoords] = []
    for s, e in zip(starts, ends, strict=True):
        coords = tuple(int(c) for c in np.unravel_index(sorted_ids[s], grid.nchunks))
        lo = [c * k for c, k in zip(coords, grid.chunks, strict=True)]
        hi = [min(a + k, n) for a, k, n in zip(lo, grid.chunks, grid.shape, strict=True)]
        region = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
        shape = tuple(b - a for a, b in zip(lo, hi, strict=True))
        rows = order[s:e]
        local = tuple(ix[rows] - a for ix, a in zip(idx, lo, strict=True))
        full = rows.size == int(np.prod(shape))
        for name, arr in arrays.items():
            dtype = np.dtype(target.dtypes[name])
            if full:
                block = np.empty(shape, dtype=dtype)
            else:  # partly covered: keep what the chunk held
                block = np.asarray(arr[region], dtype=dtype)
            block[local] = values[name][rows]
            arr[region] = block
        written.append(coords)
    return written
