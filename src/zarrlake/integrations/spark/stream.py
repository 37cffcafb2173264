"""The streaming sink: each micro-batch is one lake commit, made exactly once.

Tasks hand their rows (Arrow IPC) to the driver in their commit messages, and the driver
writes and commits the micro-batch in one session with the idempotency key
``spark-stream:<query id>:<batch id>``. The query id is the one kept in the checkpoint, so a
restarted query that replays a batch finds that batch's commit and does not write it again.
Micro-batches travel through the driver: keep them to what the driver can hold
(``maxFilesPerTrigger``, ``maxOffsetsPerTrigger``); use the batch writer for backfills.
With ``append_dim``, coordinates of that dimension found in a batch beyond the stored ones
are appended (a stream along time), instead of being refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from zarrlake.errors import InvalidInputError
from zarrlake.integrations.spark.arrays import apply_layout, plan_layout
from zarrlake.integrations.spark.blocks import write_table
from zarrlake.integrations.spark.grid import Axis, column_values
from zarrlake.integrations.spark.options import parse_write
from zarrlake.integrations.spark.schema import time_dims, value_dtypes
from zarrlake.integrations.spark.writer import abandon_quietly, commit_session

__all__ = ["BatchRows", "ZarrlakeStreamWriter", "stream_key"]


@dataclass
class BatchRows(WriterCommitMessage):
    query_id: str
    batch_id: str
    rows: int
    ipc: bytes


def stream_key(query_id: str, batch_id: int) -> str:
    return f"spark-stream:{query_id}:{batch_id}"


def _to_ipc(batches: list[pa.RecordBatch]) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)
    return bytes(sink.getvalue().to_pybytes())


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class ZarrlakeStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("zarrlake")``: see the module docstring."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise InvalidInputError(
                "the zarrlake streaming sink supports outputMode('append') only"
            )
        self.opts = parse_write(options)
        self.schema = schema
        self.dtypes = value_dtypes(schema, self.opts.dims)
        self.time_dims = time_dims(schema, self.opts.dims)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> BatchRows:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        query = (ctx.getLocalProperty("sql.streaming.queryId") if ctx else None) or ""
        batch = (ctx.getLocalProperty("streaming.sql.batchId") if ctx else None) or ""
        batches = [b for b in iterator if b.num_rows]
        rows = sum(b.num_rows for b in batches)
        return BatchRows(query, batch, rows, _to_ipc(batches) if batches else b"")

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        parts = [m for m in messages if isinstance(m, BatchRows)]
        tables = [_from_ipc(m.ipc) for m in parts if m.rows]
        if not tables:
            return
        queries = {m.query_id for m in parts}
        if len(queries) != 1 or not next(iter(queries)):
            raise InvalidInputError("the streaming query id is unknown; cannot commit exactly once")
        table = pa.concat_tables(tables)
        opts = self.opts
        repo = opts.lake.open(create=True)
        session = repo.writable_session(opts.branch)
        try:
            extra: dict[str, Axis] = {}
            if opts.append_dim is not None:
                extra[opts.append_dim] = self._data_axis(table, opts.append_dim)
            target = plan_layout(
                session.store, opts, self.dtypes, self.time_dims, False, data_axes=extra
            )
            apply_layout(session.store, opts, target, False)
            write_table(session.store, opts.group, target, table)
        except BaseException:
            abandon_quietly(session)
            raise
        key = stream_key(next(iter(queries)), batchId)
        if opts.idempotency_key:
            key = f"{opts.idempotency_key}:{batchId}"
        meta: dict[str, Any] = {"spark": {"rows": table.num_rows, "stream_batch": batchId}}
        commit_session(session, f"{opts.message} (batch {batchId})", meta, key)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None  # nothing was staged: tasks only hand rows to commit()

    def _data_axis(self, table: pa.Table, dim: str) -> Axis:
        probe = Axis(dim, 0, None, dim in self.time_dims)
        values = np.unique(column_values(table.column(dim), probe))
        return Axis(dim, int(values.size), values, probe.is_time)
