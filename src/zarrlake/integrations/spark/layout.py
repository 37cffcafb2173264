"""Lay rows out on the chunk grid, so that each task of a write holds whole chunks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from zarrlake.integrations.spark.arrays import plan_layout
from zarrlake.integrations.spark.options import parse_write
from zarrlake.integrations.spark.schema import time_dims, value_dtypes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["CHUNK_COLUMN", "layout"]

CHUNK_COLUMN = "__zarrlake_chunk"


def layout(
    df: DataFrame, *, partitions: int | None = None, overwrite: bool = False, **options: Any
) -> DataFrame:
    """Repartition ``df`` by chunk of the target arrays (same options as the write).

    Every chunk's rows end up in one partition (several chunks per partition), sorted by
    chunk, so the write that follows writes each chunk from one task. Coordinates that are
    not on the grid are refused here already. ``partitions`` defaults to Spark's default
    parallelism times two.

    >>> opts = dict(path="lake", array="temp", dims="time,lat,lon", chunks="[24, 45, 90]")
    >>> layout(df, **opts).write.format("zarrlake").options(**opts).mode("append").save()
    ... # doctest: +SKIP
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    str_opts = {k: str(v) for k, v in options.items()}
    opts = parse_write(str_opts)
    repo = opts.lake.open(create=True)
    view = repo.readonly_session(branch=opts.branch).store
    dims = opts.dims
    target = plan_layout(
        view, opts, value_dtypes(df.schema, dims), time_dims(df.schema, dims), overwrite
    )
    grid = target.grid

    def chunk_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            ids = grid.chunk_ids(grid.cell_indices(pa.Table.from_batches([b])))
            yield b.append_column(CHUNK_COLUMN, pa.array(ids.astype(np.int64), pa.int64()))

    schema = StructType([*df.schema.fields, StructField(CHUNK_COLUMN, LongType(), False)])
    n = partitions or 2 * df.sparkSession.sparkContext.defaultParallelism
    return (
        df.mapInArrow(chunk_ids, schema)
        .repartition(n, CHUNK_COLUMN)
        .sortWithinPartitions(CHUNK_COLUMN)
        .drop(F.col(CHUNK_COLUMN))
    )
