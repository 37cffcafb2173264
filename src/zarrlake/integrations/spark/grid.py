"""The chunk grid of a write: per dimension, its coordinate values and chunk size.

A row lands on the grid when each of its dimension columns equals one coordinate value
exactly (or, for an axis without coordinates, is an integer index). Nothing is rounded or
snapped: a value that is not on the grid is refused, so snap coordinates in Spark first.
Times are kept as int64 microseconds since 1970-01-01 UTC, the unit of Spark timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from zarrlake.errors import InvalidInputError

__all__ = ["TIME_UNITS", "Axis", "Grid", "column_values", "merge_axis", "parse_axis"]

TIME_UNITS = "microseconds since 1970-01-01T00:00:00"
"""CF units of time coordinate arrays (xarray decodes them to datetime64)."""


@dataclass(frozen=True, slots=True)
class Axis:
    """One dimension: ``values`` (strictly increasing) or ``None`` for a plain 0..size-1 index."""

    dim: str
    size: int
    values: np.ndarray[Any, Any] | None
    is_time: bool = False

    def indices(self, col: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Position of each value on this axis; refuses values that are not on it."""
        if self.values is None:
            if col.dtype.kind not in "iu":
                raise InvalidInputError(
                    f"dimension {self.dim!r} has no coordinates, so its column must hold "
                    f"integer indices; got {col.dtype}"
                )
            idx = col.astype(np.int64, copy=False)
            bad = (idx < 0) | (idx >= self.size)
        else:
            pos = np.searchsorted(self.values, col)
            idx = np.minimum(pos, self.size - 1)
            bad = (pos >= self.size) | (self.values[idx] != col)
        if bad.any():
            example = col[np.argmax(bad)]
            shown = _show(example, self.is_time)
            raise InvalidInputError(
                f"{int(bad.sum())} row(s) have a {self.dim!r} value that is not on the grid "
                f"(e.g. {shown}); give it in option 'coords' or snap the column to the grid"
            )
        return idx


def _show(v: Any, is_time: bool) -> str:
    if is_time:
        return str(np.datetime64(int(v), "us"))
    return repr(v.item() if hasattr(v, "item") else v)


@dataclass(frozen=True, slots=True)
class Grid:
    """The axes and chunk sizes of the arrays one job writes (all share them)."""

    axes: tuple[Axis, ...]
    chunks: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    @property
    def nchunks(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    def cell_indices(self, table: pa.Table) -> list[np.ndarray[Any, Any]]:
        """Per axis, the index of each row of ``table`` (dimension columns by name)."""
        return [a.indices(column_values(table.column(a.dim), a)) for a in self.axes]

    def chunk_ids(self, idx: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
        """Linear chunk number of each row (C order over the chunk grid)."""
        if not idx[0].size:
            return np.zeros(0, dtype=np.int64)
        parts = tuple(i // c for i, c in zip(idx, self.chunks, strict=True))
        return np.ravel_multi_index(parts, self.nchunks).astype(np.int64)


def column_values(col: pa.ChunkedArray | pa.Array, axis: Axis) -> np.ndarray[Any, Any]:
    """A dimension column as numpy, times as int64 microseconds; nulls are refused."""
    if col.null_count:
        raise InvalidInputError(f"dimension column {axis.dim!r} has {col.null_count} null(s)")
    if pa.types.is_timestamp(col.type):
        if not axis.is_time:
            raise InvalidInputError(
                f"dimension column {axis.dim!r} holds timestamps but its axis is not a time axis"
            )
        col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
    elif axis.is_time:
        raise InvalidInputError(
            f"dimension {axis.dim!r} is a time axis; its column must be a timestamp, got {col.type}"
        )
    elif not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise InvalidInputError(
            f"dimension column {axis.dim!r} must be numeric or a timestamp, got {col.type}"
        )
    return np.asarray(col.to_numpy())


def _time_us(v: Any, dim: str) -> int:
    import pandas as pd  # type: ignore[import-untyped]

    try:
        t = pd.Timestamp(v)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(f"coordinate {v!r} of {dim!r} is not a time: {exc}") from exc
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return int(t.value // 1000)


def _duration_us(v: Any, dim: str) -> int:
    import pandas as pd

    try:
        us = int(pd.Timedelta(v).value // 1000)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(f"step {v!r} of {dim!r} is not a duration: {exc}") from exc
    if us <= 0:
        raise InvalidInputError(f"step of {dim!r} must be positive, got {v!r}")
    return us


def parse_axis(dim: str, spec: Any, is_time: bool) -> Axis:
    """An axis from its ``coords`` entry: ``{"values": [...]}``, ``{"start", "step", "size"}``
    or ``{"size": n}`` (an index axis without coordinates)."""
    if not isinstance(spec, dict):
        raise InvalidInputError(f"coords of {dim!r} must be a JSON object")
    keys = set(spec)
    values: np.ndarray[Any, Any]
    if keys == {"size"}:
        size = spec["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise InvalidInputError(f"size of {dim!r} must be a positive integer")
        if is_time:
            raise InvalidInputError(f"time axis {dim!r} needs coordinates, not just a size")
        return Axis(dim, size, None)
    if keys == {"values"} and isinstance(spec["values"], list) and spec["values"]:
        raw = spec["values"]
        values = np.array([_time_us(v, dim) for v in raw] if is_time else raw)
    elif keys == {"start", "step", "size"}:
        size = spec["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise InvalidInputError(f"size of {dim!r} must be a positive integer")
        if is_time:
            start, step = _time_us(spec["start"], dim), _duration_us(spec["step"], dim)
            values = start + step * np.arange(size, dtype=np.int64)
        else:
            start, step = spec["start"], spec["step"]
            if not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in (start, step)
            ):
                raise InvalidInputError(f"start and step of {dim!r} must be numbers")
            values = start + step * np.arange(size)
    else:
        raise InvalidInputError(
            f"coords of {dim!r} must be {{'values': [...]}}, {{'start', 'step', 'size'}} or "
            f"{{'size': n}}, got keys {sorted(keys)}"
        )
    if values.dtype.kind not in "iuf":
        raise InvalidInputError(f"coordinates of {dim!r} must be numbers or times")
    if values.dtype.kind == "f" and np.isnan(values).any():
        raise InvalidInputError(f"coordinates of {dim!r} contain NaN")
    if values.size > 1 and not (np.diff(values) > 0).all():
        raise InvalidInputError(f"coordinates of {dim!r} must be strictly increasing")
    return Axis(dim, int(values.size), values, is_time)


def merge_axis(stored: Axis, given: Axis | None) -> Axis:
    """The axis after a write: ``stored`` extended by ``given``'s values beyond its end.

    Coordinates are only ever appended, so the index of every stored value stays the same.
    """
    if given is None:
        return stored
    if stored.values is None or given.values is None:
        if stored.values is not None or given.values is not None:
            raise InvalidInputError(
                f"dimension {stored.dim!r} has {'no ' if stored.values is None else ''}"
                "coordinates in the lake; give it the same way in option 'coords'"
            )
        if given.size < stored.size:
            raise InvalidInputError(
                f"dimension {stored.dim!r} has size {stored.size}; it cannot shrink to {given.size}"
            )
        return given
    if stored.is_time != given.is_time:
        raise InvalidInputError(f"dimension {stored.dim!r}: time and non-time coordinates mix")
    new = given.values[~np.isin(given.values, stored.values)]
    if not new.size:
        return stored
    if stored.size and new.min() <= stored.values[-1]:
        raise InvalidInputError(
            f"new coordinates of {stored.dim!r} (e.g. {_show(new.min(), stored.is_time)}) fall "
            "before or between stored ones; coordinates can only be appended at the end"
        )
    values = np.concatenate([stored.values, new.astype(stored.values.dtype)])
    return Axis(stored.dim, int(values.size), values, stored.is_time)
