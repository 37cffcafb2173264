"""The batch reader: one version, pinned once on the driver; partitions of stored chunks.

The plan opens the commit that ``ref`` names when the read is planned, and every task reads
that commit (``repo.readonly_session(commit=...)``), whatever the branch does meanwhile.
Partitions hold one or a few chunks that exist in that commit (listed from the catalog
through the store, never from the object store); filters on dimension columns drop chunks
that hold no matching cell and are applied exactly to the cells read.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import zarr
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from zarrlake.errors import InvalidInputError, NotFoundError
from zarrlake.integrations.spark.arrays import array_path
from zarrlake.integrations.spark.filters import axis_mask
from zarrlake.integrations.spark.grid import TIME_UNITS, Axis
from zarrlake.integrations.spark.options import LakeOptions, ReadOptions
from zarrlake.integrations.spark.schema import spark_type

__all__ = ["FilteringReader", "ReadPlan", "ZarrlakeReader", "plan_read"]

MAX_DEFAULT_PARTITIONS = 128
CELLS_PER_PARTITION = 1 << 20


@dataclass
class ReadPlan:
    """Everything a read needs, fixed on the driver (pickled to the tasks)."""

    lake: LakeOptions
    commit: str
    group: str
    arrays: tuple[str, ...]
    axes: tuple[Axis, ...]
    chunks: tuple[int, ...]
    dtypes: dict[str, str]
    fills: dict[str, Any]
    chunk_separator: str
    include_fill: bool
    chunks_per_partition: int | None
    filter_pushdown: bool
    masks: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)

    def schema(self) -> StructType:
        fields = [
            StructField(
                a.dim,
                TimestampType()
                if a.is_time
                else (LongType() if a.values is None else spark_type(a.values.dtype, a.dim)),
                nullable=False,
            )
            for a in self.axes
        ]
        fields += [StructField(n, spark_type(np.dtype(self.dtypes[n]), n)) for n in self.arrays]
        return StructType(fields)


def _dim_names(arr: Any) -> tuple[str, ...]:
    return tuple(getattr(arr.metadata, "dimension_names", None) or ())


def _arrays_of(group: zarr.Group, wanted: tuple[str, ...] | None) -> list[tuple[str, Any]]:
    found = dict(group.arrays())
    if wanted is not None:
        missing = [w for w in wanted if w not in found]
        if missing:
            raise NotFoundError(f"no array(s) {missing} in the group (it has {sorted(found)})")
        return [(w, found[w]) for w in wanted]
    dims = {d for a in found.values() for d in (_dim_names(a) or ())}
    data = [(n, a) for n, a in sorted(found.items()) if n not in dims]
    if not data:
        raise NotFoundError("the group holds no data arrays (only coordinates, or nothing)")
    return data


def plan_read(opts: ReadOptions) -> ReadPlan:
    """Resolve ``opts.ref`` once and describe the arrays to read."""
    repo = opts.lake.open()
    commit = repo.resolve(opts.ref)
    store = repo.readonly_session(commit=commit).store
    try:
        group = zarr.open_group(store, path=opts.group, mode="r")
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError) as exc:
        raise NotFoundError(f"no group {opts.group!r} at {opts.ref!r}") from exc
    arrays = _arrays_of(group, opts.arrays)
    first = arrays[0][1]
    dims = _dim_names(first)
    if len(dims) != first.ndim or any(d is None for d in dims):
        raise InvalidInputError(f"array {arrays[0][0]!r} has no dimension names")
    for name, arr in arrays[1:]:
        if _dim_names(arr) != dims or arr.shape != first.shape:
            raise InvalidInputError(
                f"arrays {arrays[0][0]!r} and {name!r} differ in dims or shape; read them apart"
            )
        if arr.chunks != first.chunks:
            raise InvalidInputError(f"arrays {arrays[0][0]!r} and {name!r} differ in chunks")
    axes = []
    coords = dict(group.arrays())
    for dim, size in zip(dims, first.shape, strict=True):
        c = coords.get(dim)
        if c is not None and c.ndim == 1 and c.shape[0] == size:
            axes.append(Axis(dim, size, np.asarray(c[:]), c.attrs.get("units") == TIME_UNITS))
        else:
            axes.append(Axis(dim, size, None))
    sep = getattr(first.metadata.chunk_key_encoding, "separator", "/")
    return ReadPlan(
        lake=opts.lake,
        commit=commit,
        group=opts.group,
        arrays=tuple(n for n, _ in arrays),
        axes=tuple(axes),
        chunks=tuple(first.chunks),
        dtypes={n: np.dtype(a.dtype).name for n, a in arrays},
        fills={n: a.fill_value for n, a in arrays},
        chunk_separator=sep,
        include_fill=opts.include_fill,
        chunks_per_partition=opts.chunks_per_partition,
        filter_pushdown=opts.filter_pushdown,
    )


def _stored_chunks(plan: ReadPlan) -> list[tuple[int, ...]]:
    """Coordinates of the chunks stored for any of the plan's arrays at its commit."""
    store = plan.lake.open().readonly_session(commit=plan.commit).store
    ndim = len(plan.axes)

    async def keys(prefix: str) -> list[str]:
        return [k async for k in store.list_prefix(prefix)]

    found: set[tuple[int, ...]] = set()
    for name in plan.arrays:
        prefix = f"{array_path(plan.group, name)}/c{plan.chunk_separator}"
        for key in asyncio.run(keys(prefix)):
            parts = key[len(prefix) :].split(plan.chunk_separator)
            if len(parts) == ndim and all(p.isdigit() for p in parts):
                found.add(tuple(int(p) for p in parts))
    return sorted(found)


class ZarrlakeReader(DataSourceReader):
    """``spark.read.format("zarrlake")``: see the module docstring."""

    def __init__(self, plan: ReadPlan) -> None:
        self.plan = plan

    def _keep(self, coords: tuple[int, ...]) -> bool:
        for axis, c, k in zip(self.plan.axes, coords, self.plan.chunks, strict=True):
            mask = self.plan.masks.get(axis.dim)
            if mask is not None and not mask[c * k : (c + 1) * k].any():
                return False
        return True

    def _default_per_partition(self, n: int) -> int:
        # A Python task costs a fraction of a second to start: give each about a million
        # cells, and keep the number of partitions bounded.
        cells = math.prod(self.plan.chunks)
        return max(1, CELLS_PER_PARTITION // cells, math.ceil(n / MAX_DEFAULT_PARTITIONS))

    def partitions(self) -> Sequence[InputPartition]:
        chunks = [c for c in _stored_chunks(self.plan) if self._keep(c)]
        per = self.plan.chunks_per_partition or self._default_per_partition(len(chunks))
        parts = [InputPartition(chunks[i : i + per]) for i in range(0, len(chunks), per)]
        return parts or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        plan = self.plan
        store = plan.lake.open().readonly_session(commit=plan.commit).store
        arrays = {
            n: zarr.open_array(store, path=array_path(plan.group, n), mode="r") for n in plan.arrays
        }
        schema = _arrow_schema(plan)
        for coords in partition.value:
            batch = _read_chunk(plan, arrays, tuple(coords), schema)
            if batch is not None:
                yield batch


def _arrow_schema(plan: ReadPlan) -> pa.Schema:
    fields = []
    for a in plan.axes:
        if a.is_time:
            t: pa.DataType = pa.timestamp("us", tz="UTC")
        elif a.values is None:
            t = pa.int64()
        else:
            t = pa.from_numpy_dtype(a.values.dtype)
        fields.append(pa.field(a.dim, t, nullable=False))
    for n in plan.arrays:
        dt = np.dtype(plan.dtypes[n])
        t = pa.from_numpy_dtype(
            {"uint8": "int16", "uint16": "int32", "uint32": "int64"}.get(dt.name, dt)
        )
        fields.append(pa.field(n, t))
    return pa.schema(fields)


def _is_fill(v: np.ndarray[Any, Any], fill: Any) -> np.ndarray[Any, Any]:
    if v.dtype.kind == "f" and fill is not None and np.isnan(fill):
        return np.isnan(v)
    return np.asarray(v == fill)


def _read_chunk(
    plan: ReadPlan, arrays: dict[str, Any], coords: tuple[int, ...], schema: pa.Schema
) -> pa.RecordBatch | None:
    lo = [c * k for c, k in zip(coords, plan.chunks, strict=True)]
    hi = [min(a + k, ax.size) for a, k, ax in zip(lo, plan.chunks, plan.axes, strict=True)]
    sel = []
    for axis, a, b in zip(plan.axes, lo, hi, strict=True):
        mask = plan.masks.get(axis.dim)
        sel.append(np.arange(a, b) if mask is None else a + np.flatnonzero(mask[a:b]))
    if any(s.size == 0 for s in sel):
        return None
    region = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
    pick = np.ix_(*[s - a for s, a in zip(sel, lo, strict=True)])
    values = {n: np.asarray(arr[region])[pick].ravel() for n, arr in arrays.items()}
    grids = np.meshgrid(*sel, indexing="ij")
    keep: np.ndarray[Any, Any] | None = None
    if not plan.include_fill:
        fill = np.ones(grids[0].size, dtype=bool)
        for n, v in values.items():
            fill &= _is_fill(v, plan.fills[n])
        keep = ~fill
        if not keep.any():
            return None
    cols: list[pa.Array] = []
    for axis, g, f in zip(plan.axes, grids, schema, strict=False):
        idx = g.ravel() if keep is None else g.ravel()[keep]
        vals = idx if axis.values is None else axis.values[idx]
        cols.append(pa.array(vals, type=f.type))
    for n, f in zip(plan.arrays, list(schema)[len(plan.axes) :], strict=True):
        v = values[n] if keep is None else values[n][keep]
        cols.append(pa.array(v).cast(f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


class FilteringReader(ZarrlakeReader):
    """The reader with filter pushdown (option ``filter_pushdown=true``). Spark refuses a
    reader that implements ``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled``
    is set, so the plain reader is the default."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        axes = {a.dim: a for a in self.plan.axes}
        left: list[Filter] = []
        for f in filters:
            col: tuple[str, ...] = getattr(f, "attribute", ())
            axis = axes.get(col[0]) if len(col) == 1 else None
            mask = axis_mask(f, axis) if axis is not None else None
            if mask is None or axis is None:
                left.append(f)
                continue
            prev = self.plan.masks.get(axis.dim)
            self.plan.masks[axis.dim] = mask if prev is None else prev & mask
        return left
