"""The typed operations a writable session stages (what travels from a store write to the
catalog, with nothing untyped on the way), and how a write becomes one."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zarrlake.catalog.interface import Read
from zarrlake.errors import InvalidInputError, InvalidKeyError
from zarrlake.model import (
    ChunkRef,
    NodeMeta,
    StagedState,
    checksum,
    content_hash,
    parse_node_meta,
)
from zarrlake.model.batches import batch_shard, text_shape
from zarrlake.model.hashing import ChunkHasher
from zarrlake.model.manifest import INLINE_LIMIT, Shard
from zarrlake.model.records import StagedEntry
from zarrlake.model.staged_batches import StagedBatches
from zarrlake.objects import PACK_CHUNK_LIMIT
from zarrlake.session.keys import Target
from zarrlake.types import ChunkCoords

__all__ = [
    "DropNode",
    "Op",
    "PutRow",
    "PutRows",
    "RecordRead",
    "entry",
    "node_states",
    "packable",
    "placed",
    "plan_write",
]


@dataclass(frozen=True, slots=True)
class PutRow:
    """Stage one row: a chunk, raw key or metadata write, or a chunk tombstone (no hash).
    ``doc`` is the metadata document a ``meta`` row references (stored with the row)."""

    row: StagedEntry
    doc: bytes | None = None


@dataclass(frozen=True, slots=True)
class PutRows:
    """Stage many rows at once (virtual chunk references: one operation, one future and one
    place in the catalog's transaction for a whole batch, not one of each per chunk)."""

    rows: tuple[StagedEntry, ...]


@dataclass(frozen=True, slots=True)
class DropNode:
    """Remove a node (group or array) of the base commit, with everything staged under it."""

    path: str


@dataclass(frozen=True, slots=True)
class RecordRead:
    """A serializable session read this: (node path, chunk coordinates, or ``None`` for the
    node's metadata), or a non-Zarr key."""

    read: Read


Op = PutRow | PutRows | DropNode | RecordRead


def packable(op: Op, size: int) -> bool:
    """Whether a write goes into a pack: chunks of arrays (not other keys), small ones."""
    return isinstance(op, PutRow) and op.row.kind == "chunk" and size <= PACK_CHUNK_LIMIT


def placed(op: Op, pack: bytes, offset: int) -> PutRow:
    """A chunk write, its row naming where it is in a pack."""
    assert isinstance(op, PutRow)
    assert op.row.ref is not None
    ref = dataclasses.replace(op.row.ref, pack=pack, offset=offset)
    return PutRow(dataclasses.replace(op.row, ref=ref), op.doc)


def entry(t: Target, ref: ChunkRef | None) -> StagedEntry:
    """The staged entry of a chunk or raw key (``ref`` ``None``: deleted)."""
    return StagedEntry(t.path, t.kind, t.coords, t.key, ref)


def _check_chunk(t: Target, size: int, nm: NodeMeta | None) -> None:
    if nm is None:
        return
    if not nm.in_grid(t.coords):
        raise InvalidKeyError(
            f"chunk key {t.store_key!r} is outside the chunk grid {nm.grid_shape} of array "
            f"{t.path or '/'!r}"
        )
    if nm.chunk_nbytes is not None and size != nm.chunk_nbytes:
        raise InvalidInputError(
            f"chunk {t.store_key!r} is {size} bytes; array {t.path or '/'!r} stores "
            f"uncompressed chunks of exactly {nm.chunk_nbytes} bytes"
        )


def plan_write(
    t: Target,
    data: bytes | memoryview,
    nm: NodeMeta | None,
    hasher: ChunkHasher,
    *,
    strict: bool,
) -> tuple[Op, bytes | None]:
    """Check and hash a write of ``data`` to ``t`` (``nm``: the metadata of a chunk's array;
    ``hasher``: the repo's content hash): what to stage, and the hash of the object to store
    first (``None`` when the bytes live in the catalog). The caller packs a small chunk; its
    row then names its place there."""
    if t.kind == "meta":
        doc = bytes(data)
        parse_node_meta(doc, strict=strict)
        return PutRow(
            StagedEntry(t.path, "meta", ref=ChunkRef(content_hash(doc), len(doc))), doc
        ), None
    if t.kind == "chunk":
        _check_chunk(t, len(data), nm)
    h = hasher(data)
    if len(data) <= INLINE_LIMIT:
        return PutRow(entry(t, ChunkRef(h, len(data), bytes(data)))), None
    return PutRow(entry(t, ChunkRef(h, len(data), crc=checksum(data)))), h


def node_states(entries: Iterable[StagedEntry]) -> dict[str, tuple[bytes | None, bool]]:
    """Per node path, (staged metadata hash, dropped) from a session's meta and drop entries."""
    out: dict[str, tuple[bytes | None, bool]] = {}
    for e in entries:
        meta, dropped = out.get(e.path, (None, False))
        if e.kind == "drop":
            dropped = True
        elif e.ref is not None:
            meta = e.ref.hash
        out[e.path] = (meta, dropped)
    return out


def staged_state(
    entries: Iterable[StagedEntry],
    unsent: Iterable[StagedEntry] = (),
    load: Callable[[str, ChunkCoords], Shard] | None = None,
) -> StagedState:
    """A session's staged changes from its staged entries, then ``unsent`` ones over them.
    With ``load`` (reads a node's batch at a shard position from the catalog), the batches
    of ``entries`` are left in the catalog (:mod:`zarrlake.model.staged_batches`): a commit
    of an import holds their hashes and chunk positions, not their references."""
    state = StagedState()
    for r in entries:
        if load is not None and r.kind == "vrefs" and r.ref is not None:
            sn = state.node(r.path)
            if not sn.batches:
                sn.batches = StagedBatches(functools.partial(load, r.path))
            sn.batches.leave(r.coords, r.ref.hash, batch_shard(r).flat)
            sn.batch_shape = text_shape(r.key)
            continue
        _apply_entry(state, r)
    for r in unsent:
        _apply_entry(state, r)
    return state


def _apply_entry(state: StagedState, r: StagedEntry) -> None:
    if r.kind == "raw":
        state.raw[r.key] = r.ref
        return
    sn = state.node(r.path)
    if r.kind == "drop":
        sn.dropped = True
    elif r.kind == "meta":
        sn.meta = None if r.ref is None else r.ref.hash
    elif r.kind == "vrefs":
        sn.batches[r.coords] = batch_shard(r)
        sn.batch_shape = text_shape(r.key)
    elif r.kind == "vshape":
        sn.batch_shape = text_shape(r.key)
    else:
        sn.chunks[r.coords] = r.ref
