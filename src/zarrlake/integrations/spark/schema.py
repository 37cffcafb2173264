"""Spark types <-> numpy dtypes, for value and dimension columns."""

from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.sql import types as T

from zarrlake.errors import InvalidInputError

__all__ = ["spark_type", "time_dims", "value_dtypes"]

_TO_NUMPY: dict[type[T.DataType], str] = {
    T.DoubleType: "float64",
    T.FloatType: "float32",
    T.LongType: "int64",
    T.IntegerType: "int32",
    T.ShortType: "int16",
    T.ByteType: "int8",
    T.BooleanType: "bool",
}

_TO_SPARK: dict[str, T.DataType] = {
    "float64": T.DoubleType(),
    "float32": T.FloatType(),
    "int64": T.LongType(),
    "int32": T.IntegerType(),
    "int16": T.ShortType(),
    "int8": T.ByteType(),
    "uint8": T.ShortType(),
    "uint16": T.IntegerType(),
    "uint32": T.LongType(),
    "bool": T.BooleanType(),
}

# Both kinds of Spark timestamps are time dimensions (NTZ is read as UTC wall-clock time).
_TIME = (T.TimestampType, T.TimestampNTZType)


def value_dtypes(schema: T.StructType, dims: tuple[str, ...]) -> dict[str, np.dtype[Any]]:
    """The numpy dtype of every non-dimension column; refuses types arrays cannot hold."""
    names = [f.name for f in schema.fields]
    missing = [d for d in dims if d not in names]
    if missing:
        raise InvalidInputError(
            f"dimension column(s) {missing} are not in the DataFrame (columns: {names})"
        )
    out: dict[str, np.dtype[Any]] = {}
    for f in schema.fields:
        if f.name in dims:
            continue
        kind = _TO_NUMPY.get(type(f.dataType))
        if kind is None:
            raise InvalidInputError(
                f"column {f.name!r} has type {f.dataType.simpleString()}; value columns must be "
                "numeric or boolean (cast it, or drop it before writing)"
            )
        out[f.name] = np.dtype(kind)
    return out


def time_dims(schema: T.StructType, dims: tuple[str, ...]) -> set[str]:
    return {f.name for f in schema.fields if f.name in dims and isinstance(f.dataType, _TIME)}


def spark_type(dtype: np.dtype[Any], what: str) -> T.DataType:
    found = _TO_SPARK.get(np.dtype(dtype).name)
    if found is None:
        raise InvalidInputError(f"{what} has dtype {dtype}, which Spark reads cannot represent")
    return found
