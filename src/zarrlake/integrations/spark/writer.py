"""The batch writer: tasks stage whole chunks into one session, the driver commits it once.

Protocol (the one Delta Lake and Iceberg follow):

1. On the driver, :class:`ZarrlakeWriter` opens one writable session on the branch and makes
   the metadata changes (create or resize the arrays, write coordinates) in it.
2. Each task joins that session by id, writes whole chunks, flushes (its writes are durable in
   the catalog before it returns) and reports which chunks it wrote. A failed or speculative
   attempt's writes are simply replaced by the winning attempt's (same bytes, same keys).
3. ``commit`` on the driver refuses a chunk reported by two tasks, then makes exactly one
   lake commit, with the idempotency key when one was given. ``abort`` abandons the session.
   Nothing is deleted: unreferenced chunk objects are garbage for ``repo.gc``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from zarrlake.errors import (
    ConflictError,
    EmptyCommitError,
    InvalidInputError,
    SessionClosedError,
    SessionError,
    UnalignedWriteError,
)
from zarrlake.integrations.spark.arrays import Target, apply_layout, plan_layout
from zarrlake.integrations.spark.blocks import ChunkCoords, write_table
from zarrlake.integrations.spark.options import WriteOptions, parse_write
from zarrlake.integrations.spark.schema import time_dims, value_dtypes
from zarrlake.session import WritableSession

__all__ = ["ChunksWritten", "ZarrlakeWriter", "commit_session", "open_write"]


@dataclass
class ChunksWritten(WriterCommitMessage):
    """What one task wrote: the chunk coordinates (shared by every array of the write)."""

    partition: int
    attempt: int
    rows: int
    chunks: list[ChunkCoords] = field(default_factory=list)


def open_write(
    opts: WriteOptions, schema: StructType, overwrite: bool
) -> tuple[WritableSession, Target]:
    """Open the write's session and make its metadata changes (on the driver)."""
    repo = opts.lake.open(create=True)
    dtypes = value_dtypes(schema, opts.dims)
    session = repo.writable_session(opts.branch)
    try:
        target = plan_layout(session.store, opts, dtypes, time_dims(schema, opts.dims), overwrite)
        apply_layout(session.store, opts, target, overwrite)
        session.flush()
    except BaseException:
        session.abandon()
        raise
    return session, target


def check_disjoint(messages: list[Any]) -> None:
    """Refuse chunks reported by two tasks (the input was not laid out on the chunk grid)."""
    owner: dict[ChunkCoords, int] = {}
    for m in messages:
        if not isinstance(m, ChunksWritten):
            continue
        for c in m.chunks:
            other = owner.setdefault(tuple(c), m.partition)
            if other != m.partition:
                raise UnalignedWriteError(
                    f"chunk {tuple(c)} was written by two tasks (partitions {other} and "
                    f"{m.partition}), so one would overwrite the other's rows; nothing was "
                    "committed. Lay the rows out on the chunk grid first: "
                    "zarrlake.integrations.spark.layout(df, **options)"
                )


def commit_session(
    session: WritableSession, message: str, metadata: dict[str, Any], key: str | None
) -> str | None:
    """Commit once; ``None`` when there was nothing to commit (the session is abandoned)."""
    if not session.has_changes:
        session.abandon()
        return None
    try:
        return session.commit(message, metadata=metadata, idempotency_key=key)
    except EmptyCommitError:
        session.abandon()  # the rows rewrote what the branch already holds
        return None
    except ConflictError:
        if key is None:
            raise
        # A racing job with the same key may have committed the same chunks first: a second
        # attempt checks the key before anything else and returns that commit.
        return session.commit(message, metadata=metadata, idempotency_key=key)


def abandon_quietly(session: WritableSession | None) -> None:
    """Abandon an open session; a session already closed (committed) is left as it is."""
    if session is None:
        return
    with contextlib.suppress(SessionError):
        session.abandon()


class ZarrlakeWriter(DataSourceArrowWriter):
    """``df.write.format("zarrlake")``: see the module docstring for the protocol."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        self.opts = parse_write(options)
        if self.opts.append_dim is not None:
            raise InvalidInputError(
                "option 'append_dim' is for the streaming sink; a batch write gives the new "
                "coordinates in option 'coords'"
            )
        session, self.target = open_write(self.opts, schema, overwrite)
        assert session.id is not None
        self.session_id: str = session.id
        self.overwrite = overwrite

    def _session(self) -> WritableSession | None:
        """The job's session joined in this process; None once it was committed."""
        found = self.opts.lake.open().session(self.session_id)
        return found if isinstance(found, WritableSession) else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChunksWritten:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition, attempt = (ctx.partitionId(), ctx.attemptNumber()) if ctx else (0, 0)
        batches = list(iterator)
        chunks: list[ChunkCoords] = []
        rows = sum(b.num_rows for b in batches)
        if rows:
            session = self._session()
            if session is None:
                raise SessionClosedError(
                    f"the job's session {self.session_id} was already committed"
                )
            table = pa.Table.from_batches(batches)
            chunks = write_table(session.store, self.opts.group, self.target, table)
            session.flush()
        fail = self.opts.test_fail
        if partition == 0 and (fail == "always" or (fail == "once" and attempt == 0)):
            raise RuntimeError(
                f"zarrlake test_fail={fail}: injected failure of task attempt {attempt}"
            )
        return ChunksWritten(partition, attempt, rows, chunks)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        session = self._session()
        if session is None:
            return  # committed already (a repeated commit call): nothing more to do
        try:
            check_disjoint(list(messages))
        except UnalignedWriteError:
            abandon_quietly(session)
            raise
        done = [m for m in messages if isinstance(m, ChunksWritten)]
        metadata = {
            "spark": {
                "rows": sum(m.rows for m in done),
                "chunks": sum(len(m.chunks) for m in done),
                "tasks": len(done),
                "mode": "overwrite" if self.overwrite else "append",
            }
        }
        commit_session(session, self.opts.message, metadata, self.opts.idempotency_key)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        abandon_quietly(self._session())
