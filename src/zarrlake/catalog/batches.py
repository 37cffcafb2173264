"""Staging batches of virtual references (:mod:`zarrlake.model.batches`) inside a session's
staging transaction, so that whatever order cooperating processes stage in, the rows mean
what staging the same references one by one would mean:

- a batch at a position that already holds one (an earlier call, another process) is
  written over it, entry by entry;
- a chunk staged earlier at coordinates the batch covers is removed (the batch is newer);
- the first batch of an array records its shard shape (a ``vshape`` row): reads of the
  session find the batches by it, and the commit gives a new array that shape. A batch taken
  with another shape (a race between processes) is staged as chunk rows instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.rows import coords_text, staged_values
from zarrlake.catalog.schema import sessions, staged
from zarrlake.model.batches import (
    batch_entry,
    batch_shard,
    entry_chunks,
    entry_coords,
    overlay,
)
from zarrlake.model.manifest import Shard
from zarrlake.model.records import StagedEntry

__all__ = ["stage_batches"]

_IN = 500  # keys per IN list


def stage_batches(
    conn: DriverTx,
    session_id: str,
    entries: Sequence[StagedEntry],
    write: Callable[[DriverTx, list[dict[str, Any]]], None],
) -> None:
    """Stage ``entries`` (batches) in the transaction of ``conn``; ``write`` upserts rows."""
    # one process of the session at a time merges batches: two reading the same position
    # (or finding none) and writing it back would lose one's references
    conn.execute(sa.select(sessions.c.id).where(sessions.c.id == session_id).with_for_update())
    by_path: dict[str, list[StagedEntry]] = defaultdict(list)
    for e in entries:
        by_path[e.path].append(e)
    for path, items in by_path.items():
        mine = sa.and_(staged.c.session_id == session_id, staged.c.path == path)
        shape = conn.execute(
            sa.select(staged.c.source).where(mine, staged.c.kind == "vshape")
        ).scalar()
        out: list[StagedEntry] = []
        if shape is None:  # the array's first batch: its shard shape is the session's now
            shape = items[0].key
            out.append(StagedEntry(path, "vshape", (), shape))
        for e in items:
            if e.key != shape:  # another shape already: these references go as chunks
                chunks = entry_chunks(e)
                out.extend(StagedEntry(path, "chunk", c, "", r) for c, r in chunks.items())
            else:
                out.append(e)
        batches = [e for e in out if e.kind == "vrefs"]
        chunk_rows = [e for e in out if e.kind != "vrefs"]
        merged = _merge_existing(conn, mine, batches)
        if (
            batches
            and conn.execute(
                sa.select(staged.c.key).where(mine, staged.c.kind == "chunk").limit(1)
            ).first()
        ):
            _drop_covered(conn, mine, batches)  # the new entries only: a chunk staged
            # after an earlier batch at the same position stays over it
        rows = staged_values(session_id, [*merged, *chunk_rows])
        if rows:
            write(conn, rows)


def _merge_existing(conn: DriverTx, mine: Any, batches: list[StagedEntry]) -> list[StagedEntry]:
    """``batches``, each written over the batch staged before at its position."""
    if not batches:
        return []
    keys = {coords_text(e.coords): e for e in batches}
    found: dict[str, bytes] = {}
    names = list(keys)
    for start in range(0, len(names), _IN):
        q = sa.select(staged.c.key, staged.c.inline).where(
            mine, staged.c.kind == "vrefs", staged.c.key.in_(names[start : start + _IN])
        )
        found.update((r.key, bytes(r.inline)) for r in conn.execute(q))
    out = []
    for key, e in keys.items():
        old = found.get(key)
        if old is None:
            out.append(e)
            continue
        out.append(batch_entry(e.path, e.coords, e.key, overlay(Shard.decode(old), batch_shard(e))))
    return out


def _drop_covered(conn: DriverTx, mine: Any, batches: list[StagedEntry]) -> None:
    """Remove the chunk rows at coordinates the batches cover (they were staged before)."""
    texts: list[str] = []
    for e in batches:
        texts.extend(map(coords_text, entry_coords(e)))
    for start in range(0, len(texts), _IN):
        conn.execute(
            sa.delete(staged).where(
                mine, staged.c.kind == "chunk", staged.c.key.in_(texts[start : start + _IN])
            )
        )
