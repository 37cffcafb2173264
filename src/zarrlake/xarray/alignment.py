"""The alignment rule: parallel writers must write whole chunks."""

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import xarray as xr
import zarr

from zarrlake.errors import (
    InvalidInputError,
    UnalignedWriteError,
)
from zarrlake.store import LakeStore
from zarrlake.xarray.provenance import Region, WriteMode

__all__ = ["check_aligned", "resolve_region"]


# -- the alignment rule ----------------------------------------------------------------------


def check_aligned(
    ds: xr.Dataset,
    store: LakeStore,
    *,
    group: str | None = None,
    mode: WriteMode = "w-",
    region: Region | None = None,
    append_dim: Hashable | None = None,
    encoding: Mapping[Any, Mapping[str, Any]] | None = None,
    shared: bool = False,
) -> None:
    """Refuse a write whose parallel pieces would share a chunk, before anything is written.

    The pieces are the dask chunks of each variable and, when the session is ``shared`` with
    other jobs, the whole write. Every edge between pieces must fall on a chunk boundary of the
    target array (a shard boundary when it is sharded); the end of the array counts as one.
    A dask region write (``mode="r+"``) must also start and end on boundaries, as xarray
    requires.

    Raises
    ------
    UnalignedWriteError
        Naming the variable, the dimension, the offending positions and the chunk boundaries.
    """
    existing = _existing_arrays(store, group) if mode != "w" else {}
    slices = resolve_region(ds, store, group, region) if region is not None else {}
    encoding = encoding or {}
    for name, var in ds.variables.items():
        if region is not None and name in ds.indexes:
            continue  # xarray does not write indexes in region writes
        pieces = var.chunks
        strict_edges = shared or (pieces is not None and mode == "r+")
        if pieces is None and not strict_edges:
            continue  # one piece written by this process, merged with what the chunk holds
        key = str(name)
        if key in existing:
            shape, grid = existing[key]
            if len(shape) != var.ndim:
                continue  # xarray refuses this write with its own message
            starts, ends = [], []
            for size, n, d in zip(shape, var.shape, var.dims, strict=True):
                if d == append_dim:  # the new rows go after the current ones
                    starts.append(size)
                    ends.append(size + n)
                else:
                    starts.append((slices[d].start or 0) if d in slices else 0)
                    ends.append(size)
        else:
            found = _new_grid(var, encoding.get(name, {}))
            if found is None:
                continue  # zarr chooses the chunks of a new numpy variable: one piece
            grid, starts, ends = found, [0] * var.ndim, list(var.shape)
        sizes = pieces if pieces is not None else tuple((n,) for n in var.shape)
        for axis, dim in enumerate(var.dims):
            _check_axis(
                key, str(dim), grid[axis], starts[axis], ends[axis], sizes[axis], strict_edges
            )


def _check_axis(
    name: str,
    dim: str,
    grid: int,
    start: int,
    end: int,
    sizes: tuple[int, ...],
    strict_edges: bool,
) -> None:
    edges = [start]
    for n in sizes:
        edges.append(edges[-1] + n)
    checked = edges if strict_edges else edges[1:-1]
    bad = [e for e in checked if e % grid and e != end]
    if not bad:
        return
    bounds = [*range(0, end, grid), end]
    shown = ", ".join(map(str, bounds[:6])) + (f", ..., {bounds[-1]}" if len(bounds) > 6 else "")
    raise UnalignedWriteError(
        f"cannot write variable {name!r}: along {dim!r} its pieces start or end at "
        f"{', '.join(map(str, bad[:10]))}, inside zarr chunks (chunk boundaries along {dim!r} "
        f"are every {grid}: {shown}). Two tasks or jobs writing parts of one chunk would each "
        "write the whole chunk and one would silently replace the other. Align the pieces: "
        f"rechunk with ds.chunk({{{dim!r}: {grid}}}) (or a multiple of {grid}), start and end "
        "regions on chunk boundaries, or choose other zarr chunks in the encoding. "
        "Nothing was written."
    )


def _existing_arrays(
    store: LakeStore, group: str | None
) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """name -> (shape, write grid) of the arrays already in the target group."""
    try:
        g = zarr.open_group(store.with_read_only(True), path=group or "", mode="r")
    except FileNotFoundError:
        return {}
    out: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for name, arr in g.arrays():
        out[name] = (tuple(arr.shape), tuple(arr.shards or arr.chunks))
    return out


def _new_grid(var: xr.Variable, enc: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The write grid xarray will give a new array: shards or chunks from the encoding, else
    the first dask chunk along each dimension; ``None`` when zarr picks (numpy data)."""
    for key in ("shards", "chunks"):
        for source in (enc, var.encoding):
            value = source.get(key)
            if isinstance(value, int):
                return (value,) * var.ndim
            if (
                isinstance(value, tuple | list)
                and len(value) == var.ndim
                and all(isinstance(v, int) for v in value)
            ):
                return tuple(value)
    if var.chunks is not None:
        return tuple(c[0] if c else 1 for c in var.chunks)
    return None


def resolve_region(
    ds: xr.Dataset, store: LakeStore, group: str | None, region: Region
) -> dict[Hashable, slice]:
    """``region=`` with every ``"auto"`` replaced by the slice xarray will find."""
    wanted: dict[Hashable, slice | str] = {}
    wanted.update(dict.fromkeys(ds.dims, "auto") if region == "auto" else region)
    out: dict[Hashable, slice] = {}
    target: xr.Dataset | None = None
    for dim, value in wanted.items():
        if isinstance(value, slice):
            out[dim] = value
            continue
        if dim not in ds.indexes:
            out[dim] = slice(0, ds.sizes[dim])
            continue
        if target is None:
            target = xr.open_zarr(
                store.with_read_only(True),
                group=group,
                consolidated=False,
                zarr_format=3,
                chunks=None,
            )
        if dim not in target.indexes:
            raise InvalidInputError(
                f"region='auto' finds the rows to write by the {dim!r} coordinate, and group "
                f"{group or '/'!r} has none; give region={{{dim!r}: slice(start, stop)}}"
            )
        idx = target.indexes[dim].get_indexer(ds.indexes[dim])
        if len(idx) and (idx >= 0).all() and (np.diff(idx) == 1).all():
            out[dim] = slice(int(idx[0]), int(idx[-1]) + 1)
    return out
