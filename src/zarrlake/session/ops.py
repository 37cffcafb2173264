"""The typed operations a writable session stages: what travels from a store write to the
catalog, with nothing untyped on the way."""

from __future__ import annotations

from dataclasses import dataclass

from zarrlake.catalog import StagedRow

__all__ = ["DropNode", "Op", "PutRow", "RecordRead"]


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
