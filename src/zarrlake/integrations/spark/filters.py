"""Filters on dimension columns, turned into boolean masks over each axis's coordinates.

A filter is claimed (not handed back to Spark) only when the mask applies it exactly as Spark
would, since Spark does not check claimed filters again. Anything else is handed back.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import TimestampType

from zarrlake.integrations.spark.grid import Axis

__all__ = ["axis_mask"]

_OPS = {
    GreaterThan: np.greater,
    GreaterThanOrEqual: np.greater_equal,
    LessThan: np.less,
    LessThanOrEqual: np.less_equal,
    EqualTo: np.equal,
}


def _literal(value: Any, axis: Axis) -> Any | None:
    """The literal on the axis's scale (microseconds for times), or None if not exact."""
    if axis.is_time:
        if not isinstance(value, datetime):
            return None
        us = TimestampType().toInternal(value)
        # Spark made this naive datetime from microseconds in local time; claim it only if
        # it converts back to the same instant (not an ambiguous wall-clock time).
        if us is None or (value.tzinfo is None and TimestampType().fromInternal(us) != value):
            return None
        return int(us)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _coords(axis: Axis) -> np.ndarray[Any, Any]:
    if axis.values is None:
        return np.arange(axis.size, dtype=np.int64)
    if axis.values.dtype.kind == "f":
        # Spark widens a float column to double to compare it with a double literal
        return axis.values.astype(np.float64)
    return axis.values


def axis_mask(f: Filter, axis: Axis) -> np.ndarray[Any, Any] | None:
    """Which positions of ``axis`` pass filter ``f`` (on that axis's column), or None when
    the filter cannot be applied exactly here."""
    coords = _coords(axis)
    if isinstance(f, IsNotNull):
        return np.ones(axis.size, dtype=bool)  # dimension values are never null
    if isinstance(f, In):
        lits = [_literal(v, axis) for v in f.value]
        if not lits or any(v is None for v in lits):
            return None
        mask = np.zeros(axis.size, dtype=bool)
        for v in lits:
            mask |= coords == v
        return mask
    op = _OPS.get(type(f))
    if op is None:
        return None
    lit = _literal(f.value, axis)  # type: ignore[attr-defined]
    if lit is None:
        return None
    return np.asarray(op(coords, lit), dtype=bool)
