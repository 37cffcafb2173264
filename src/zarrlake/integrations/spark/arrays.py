"""The arrays of a write in the lake: their grid, read from the lake and the options, and the
driver-side metadata changes (create, resize, coordinates) made before any task runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import zarr
from zarr.errors import ArrayNotFoundError, GroupNotFoundError, NodeNotFoundError

from zarrlake.errors import InvalidInputError
from zarrlake.integrations.spark.grid import TIME_UNITS, Axis, Grid, merge_axis, parse_axis
from zarrlake.integrations.spark.options import WriteOptions

__all__ = ["Target", "apply_layout", "array_path", "fill_value", "plan_layout"]

_MISSING = (ArrayNotFoundError, GroupNotFoundError, NodeNotFoundError, FileNotFoundError, KeyError)


def _node(store: Any, path: str) -> Any:
    try:
        return zarr.open(store, path=path, mode="r")
    except _MISSING:
        return None


def array_path(group: str, name: str) -> str:
    return f"{group}/{name}" if group else name


class Target:
    """What one write does: the grid after it, and which arrays exist already."""

    def __init__(
        self,
        grid: Grid,
        arrays: dict[str, str],
        dtypes: dict[str, np.dtype[Any]],
        existing: set[str],
        stored: dict[str, int],
    ) -> None:
        self.grid = grid
        self.arrays = arrays  # value column -> array name
        self.dtypes = dtypes  # array name -> dtype
        self.existing = existing  # array names present before the write
        self.stored_sizes = stored  # dim -> coordinate length before the write


def _stored_axes(
    store: Any, opts: WriteOptions, names: list[str]
) -> tuple[dict[str, Axis], tuple[int, ...] | None, dict[str, np.dtype[Any]]]:
    """Axes, chunks and dtypes of the target arrays that already exist."""
    shape: tuple[int, ...] | None = None
    chunks: tuple[int, ...] | None = None
    dtypes: dict[str, np.dtype[Any]] = {}
    for name in names:
        node = _node(store, array_path(opts.group, name))
        if node is None:
            continue
        if not isinstance(node, zarr.Array):
            raise InvalidInputError(f"{array_path(opts.group, name)!r} is a group, not an array")
        dn = tuple(node.metadata.dimension_names or ())  # type: ignore[union-attr]
        if dn != opts.dims:
            raise InvalidInputError(
                f"array {array_path(opts.group, name)!r} has dims {list(dn)}, "
                f"the write gives {list(opts.dims)}"
            )
        if shape is not None and (node.shape != shape or node.chunks != chunks):
            raise InvalidInputError(
                f"the arrays of group {opts.group!r} differ in shape or chunks; write them apart"
            )
        shape, chunks = node.shape, node.chunks
        dtypes[name] = np.dtype(node.dtype)
    axes: dict[str, Axis] = {}
    for i, dim in enumerate(opts.dims):
        coord = _node(store, array_path(opts.group, dim))
        if isinstance(coord, zarr.Array) and coord.ndim == 1:
            values = np.asarray(coord[:])
            is_time = coord.attrs.get("units") == TIME_UNITS
            axes[dim] = Axis(dim, int(values.size), values, is_time)
        elif shape is not None:
            axes[dim] = Axis(dim, shape[i], None)
    return axes, chunks, dtypes


def plan_layout(
    store: Any,
    opts: WriteOptions,
    value_dtypes: dict[str, np.dtype[Any]],
    time_dims: set[str],
    overwrite: bool,
    *,
    data_axes: dict[str, Axis] | None = None,
) -> Target:
    """The grid a write lands on, from what ``store`` holds (a view of the branch or the
    write's session) and the options; changes nothing. ``data_axes`` (streaming with
    ``append_dim``) extend axes with coordinates found in the rows."""
    cols = list(value_dtypes)
    if opts.array is not None:
        if len(cols) != 1:
            raise InvalidInputError(
                f"option 'array' takes one value column; the DataFrame has {len(cols)} besides "
                f"the dims ({', '.join(cols)}); use option 'group' for several"
            )
        arrays = {cols[0]: opts.array}
    else:
        if not cols:
            raise InvalidInputError("the DataFrame has no value column besides the dims")
        arrays = {c: c for c in cols}
    clash = set(arrays.values()) & set(opts.dims)
    if clash:
        raise InvalidInputError(f"value column(s) {sorted(clash)} have the name of a dim")
    stored, chunks, dtypes = (
        ({}, None, {}) if overwrite else _stored_axes(store, opts, list(arrays.values()))
    )
    existing = set(dtypes)
    axes: list[Axis] = []
    for dim in opts.dims:
        spec = opts.coords.get(dim)
        given = parse_axis(dim, spec, dim in time_dims) if spec is not None else None
        data = (data_axes or {}).get(dim)
        if dim in stored:
            axis = merge_axis(stored[dim], given)
        elif given is not None:
            axis = given
        elif data is not None:
            axis, data = data, None
        else:
            raise InvalidInputError(
                f"dimension {dim!r} has no coordinates in the lake yet; give them in option "
                f'\'coords\', e.g. {{"{dim}": {{"start": 0, "step": 1, "size": 10}}}}'
            )
        if data is not None:
            axis = merge_axis(axis, data)
        if axis.is_time != (dim in time_dims):
            raise InvalidInputError(
                f"dimension {dim!r}: the lake and the column disagree on whether it is a time"
            )
        axes.append(axis)
    if opts.chunks is not None:
        given_chunks = tuple(opts.chunks[d] for d in opts.dims)
        if chunks is not None and given_chunks != chunks:
            raise InvalidInputError(
                f"the arrays exist with chunks {list(chunks)}; option 'chunks' gives "
                f"{list(given_chunks)} (drop the option, or overwrite the arrays)"
            )
        chunks = given_chunks
    if chunks is None:
        raise InvalidInputError(
            "option 'chunks' is required when the arrays are created, e.g. "
            '{"time": 24, "lat": 90, "lon": 90}'
        )
    for col, name in arrays.items():
        if name in dtypes and not np.can_cast(value_dtypes[col], dtypes[name], "same_kind"):
            raise InvalidInputError(
                f"column {col!r} ({value_dtypes[col]}) cannot be written into array "
                f"{name!r} ({dtypes[name]})"
            )
        dtypes.setdefault(name, value_dtypes[col])
    sizes = {d: a.size for d, a in stored.items()}
    return Target(Grid(tuple(axes), chunks), arrays, dtypes, existing, sizes)


def fill_value(dtype: np.dtype[Any]) -> Any:
    if dtype.kind == "f":
        return float("nan")
    return False if dtype.kind == "b" else 0


def apply_layout(store: Any, opts: WriteOptions, target: Target, overwrite: bool) -> None:
    """Create or resize the arrays and write the coordinate arrays, through ``store`` (the
    write's session), so that the tasks find them."""
    grid = target.grid
    group = zarr.open_group(store, path=opts.group, mode="a")
    for name, dtype in target.dtypes.items():
        if name not in target.existing or overwrite:
            group.create_array(
                name,
                shape=grid.shape,
                dtype=dtype,
                chunks=grid.chunks,
                fill_value=fill_value(dtype),
                dimension_names=list(opts.dims),
                overwrite=True,
            )
        else:
            arr = zarr.open_array(store, path=array_path(opts.group, name), mode="r+")
            if arr.shape != grid.shape:
                arr.resize(grid.shape)
    for axis, chunk in zip(grid.axes, grid.chunks, strict=True):
        if axis.values is None:
            continue
        old = 0 if overwrite else target.stored_sizes.get(axis.dim, 0)
        if old == 0:
            attrs: dict[str, Any] = (
                {"units": TIME_UNITS, "calendar": "proleptic_gregorian"} if axis.is_time else {}
            )
            coord = group.create_array(
                axis.dim,
                shape=(axis.size,),
                dtype=axis.values.dtype,
                chunks=(max(chunk, 1),),
                dimension_names=[axis.dim],
                attributes=attrs,
                overwrite=True,
            )
            coord[:] = axis.values
        elif axis.size > old:
            coord = zarr.open_array(store, path=array_path(opts.group, axis.dim), mode="r+")
            coord.resize((axis.size,))
            coord[old:] = axis.values[old:]
