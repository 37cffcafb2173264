"""The typed operations a writable session stages: what travels from a store write to the
catalog, with nothing untyped on the way."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from zarrlake.catalog import StagedRow
from zarrlake.objects import PACK_CHUNK_LIMIT

__all__ = ["DropNode", "Op", "PutRow", "RecordRead", "packable", "placed"]


@dataclass(frozen=True, slots=True)
class PutRow:
    """Stage one row: a chunk, raw key or metadata write, or a chunk tombstone (no hash).
    ``doc`` is the metadata document a ``meta`` row references (stored with the row)."""

    row: StagedRow
    doc: bytes | None = None


@dataclass(frozen=True, slots=True)
class DropNode:
    """Remove a node (group or array) of the base commit, with everything staged under it."""

    path: str


@dataclass(frozen=True, slots=True)
class RecordRead:
    """A serializable session read this (``key`` ``""`` is the node's metadata, ``"i,j"`` a
    chunk, ``"raw:<key>"`` a non-Zarr key)."""

    path: str
    key: str


Op = PutRow | DropNode | RecordRead


def packable(op: Op, size: int) -> bool:
    """Whether a write goes into a pack: chunks of arrays (not other keys), small ones."""
    return isinstance(op, PutRow) and op.row.kind == "chunk" and size <= PACK_CHUNK_LIMIT


def placed(op: Op, pack: bytes, offset: int) -> PutRow:
    """A chunk write, its row naming where it is in a pack."""
    assert isinstance(op, PutRow)
    return PutRow(dataclasses.replace(op.row, pack=pack, offset=offset), op.doc)
