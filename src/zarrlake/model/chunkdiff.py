"""Which chunks differ between two versions of an array: by comparing manifests shard by
shard (shards whose hashes are equal are skipped without being loaded), or, for a commit and its
first parent, as the commit's change set records them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from zarrlake.model.changes import (
    ADDED,
    CHANGED,
    KIND_MASK,
    REMOVED,
    VIRTUAL_AFTER,
    VIRTUAL_BEFORE,
    ChangeSet,
    SnapshotReader,
    iter_manifest,
)
from zarrlake.model.index import ManifestIndex, index_delta
from zarrlake.model.manifest import VIRTUAL, ChunkRef, Shard
from zarrlake.model.metadata import NodeMeta
from zarrlake.model.snapshot import NodeEntry
from zarrlake.types import ChunkCoords

__all__ = ["ChunkSets", "ShardDelta", "chunk_sets", "manifest_delta", "recorded_sets"]


@dataclass(frozen=True, slots=True)
class ShardDelta:
    """How one shard position differs: row indices into the ``before`` and ``after`` shards."""

    pos: ChunkCoords
    shard_shape: tuple[int, ...]
    before: Shard
    after: Shard
    added: np.ndarray  # rows of ``after`` with no entry before
    changed: np.ndarray  # rows of ``after`` whose hash differs from before
    removed: np.ndarray  # rows of ``before`` with no entry after

    def coords(self, shard: Shard, rows: np.ndarray) -> np.ndarray:
        """Chunk coordinates (``n x ndim`` int64) of ``rows`` of ``shard``."""
        return _flat_to_coords(self.pos, shard.flat[rows], self.shard_shape)

    def refs(self, rows: np.ndarray) -> Iterator[tuple[ChunkCoords, ChunkRef]]:
        """(coords, ref) of ``rows`` of the ``after`` shard."""
        coords = self.coords(self.after, rows).tolist()
        for c, i in zip(coords, rows.tolist(), strict=True):
            yield tuple(c), self.after.ref_at(i)


def _flat_to_coords(pos: ChunkCoords, flat: np.ndarray, shard_shape: tuple[int, ...]) -> np.ndarray:
    if not shard_shape:
        return np.zeros((len(flat), 0), np.int64)
    local = np.stack(np.unravel_index(flat.astype(np.int64), shard_shape), axis=1).astype(np.int64)
    return local + np.asarray(pos, np.int64) * np.asarray(shard_shape, np.int64)


_NO_ROWS = np.empty(0, np.intp)
_NO_ROWS.flags.writeable = False
_NO_SHARD = Shard.empty()  # the side of a shard position that has none (never modified)


def _compare_shards(a: Shard, b: Shard) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(added, changed, removed) rows; both shards' indices are sorted and unique."""
    if not len(a):  # a shard that is new (the common case of a diff): all of it is added
        return np.arange(len(b)), _NO_ROWS, _NO_ROWS
    if not len(b):
        return _NO_ROWS, _NO_ROWS, np.arange(len(a))
    at = np.minimum(np.searchsorted(a.flat, b.flat), len(a) - 1)
    both = a.flat[at] == b.flat
    ib = np.nonzero(both)[0]
    ia = at[ib]
    differs = (a.hashes[ia] != b.hashes[ib]).any(axis=1)
    only_a = np.ones(len(a), bool)
    only_a[ia] = False
    return np.nonzero(~both)[0], ib[differs], np.nonzero(only_a)[0]


def manifest_delta(
    before: ManifestIndex | None, after: ManifestIndex | None, reader: SnapshotReader
) -> Iterator[ShardDelta]:
    """The differing shards of two manifests, skipping subtrees and shards whose hash is equal.

    Both manifests must share a shard shape (or one may be ``None``); see :func:`diff_roots`
    for the general case.
    """
    known = after if after is not None else before
    shape = known.shard_shape if known is not None else ()
    differing = index_delta(before, after, reader)
    wanted = [h for _, ha, hb in differing for h in (ha, hb) if h is not None]
    if len(wanted) > 1:  # one query for all, instead of one per shard
        reader.prefetch_shards(wanted)
    for pos, ha, hb in differing:
        sa = reader.shard(ha) if ha is not None else _NO_SHARD
        sb = reader.shard(hb) if hb is not None else _NO_SHARD
        added, changed, removed = _compare_shards(sa, sb)
        yield ShardDelta(pos, shape, sa, sb, added, changed, removed)


def _as_set(arr: np.ndarray) -> frozenset[ChunkCoords]:
    return frozenset(tuple(row) for row in arr.tolist())


class _CoordsOf:
    """Rows of shards gathered by shard position, turned into chunk coordinates all at once
    (per shard, the conversion would cost more than the comparison for a diff touching
    hundreds of shards)."""

    def __init__(self, shard_shape: tuple[int, ...]) -> None:
        self.shape = shard_shape
        self.pos: list[ChunkCoords] = []
        self.flat: list[np.ndarray] = []

    def add(self, pos: ChunkCoords, shard: Shard, rows: np.ndarray) -> None:
        if len(rows):
            self.pos.append(pos)
            self.flat.append(shard.flat[rows])

    def coords(self) -> frozenset[ChunkCoords]:
        if not self.flat:
            return frozenset()
        if not self.shape:  # a 0-d array: one chunk, at ()
            return frozenset({()})
        counts = [len(f) for f in self.flat]
        flat = np.concatenate(self.flat).astype(np.int64)
        shape = np.asarray(self.shape, np.int64)
        origins = np.repeat(np.asarray(self.pos, np.int64) * shape, counts, axis=0)
        return _as_set(np.stack(np.unravel_index(flat, self.shape), axis=1) + origins)


ChunkSets = tuple[
    frozenset[ChunkCoords], frozenset[ChunkCoords], frozenset[ChunkCoords], frozenset[ChunkCoords]
]


def chunk_sets(
    a: NodeEntry | None,
    b: NodeEntry | None,
    ma: NodeMeta | None,
    mb: NodeMeta | None,
    reader: SnapshotReader,
) -> ChunkSets:
    """(added, changed, removed, virtual among added and changed) chunk coordinates."""
    ha = a.manifest if a is not None and ma is not None and ma.is_array else None
    hb = b.manifest if b is not None and mb is not None and mb.is_array else None
    if ha == hb:
        return frozenset(), frozenset(), frozenset(), frozenset()
    ia = reader.index(ha) if ha is not None else None
    ib = reader.index(hb) if hb is not None else None
    if ia is not None and ib is not None and ia.shard_shape != ib.shard_shape:
        return _full_compare(ia, ib, reader)
    known = ib if ib is not None else ia
    assert known is not None  # ha != hb, so one side at least has a manifest
    added, changed, removed, virtual = (_CoordsOf(known.shard_shape) for _ in range(4))
    for d in manifest_delta(ia, ib, reader):
        added.add(d.pos, d.after, d.added)
        changed.add(d.pos, d.after, d.changed)
        removed.add(d.pos, d.before, d.removed)
        if d.after.has_sources:  # only shards with a sources table hold virtual entries
            new = np.concatenate([d.added, d.changed]).astype(np.int64)
            virtual.add(d.pos, d.after, new[d.after.kinds[new] == VIRTUAL])
    return added.coords(), changed.coords(), removed.coords(), virtual.coords()


_NONE: ChunkSets = (frozenset(), frozenset(), frozenset(), frozenset())


def recorded_sets(changes: Sequence[ChangeSet], path: str, reverse: bool) -> ChunkSets | None:
    """A node's chunk sets as exact change sets record them: those of the commits from one
    version to the other along first parents, oldest first (``reverse``: read from the newer
    version back to the older). ``None`` where they do not say: a change set that does not
    know, or a chunk present on both sides that more than one commit touched (whether it
    ended as it began takes its content)."""
    kinds = _composed(changes, path)
    if kinds is None:
        return None
    out: tuple[set[ChunkCoords], ...] = (set(), set(), set(), set())
    added, removed = (REMOVED, ADDED) if reverse else (ADDED, REMOVED)
    virtual = VIRTUAL_BEFORE if reverse else VIRTUAL_AFTER
    for c, k in kinds.items():
        kind = k & KIND_MASK
        if kind == added:
            out[0].add(c)
        elif kind == CHANGED:
            out[1].add(c)
        elif kind == removed:
            out[2].add(c)
        if k & virtual and kind != removed:
            out[3].add(c)
    return frozenset(out[0]), frozenset(out[1]), frozenset(out[2]), frozenset(out[3])


def _composed(changes: Sequence[ChangeSet], path: str) -> Mapping[ChunkCoords, int] | None:
    """How each chunk of ``path`` changed across ``changes`` (oldest first), or ``None``."""
    if len(changes) == 1:  # the common case: a commit against its parent
        nc = changes[0].nodes.get(path)
        if nc is None:
            return {}
        return None if nc.deleted else nc.kinds
    merged: dict[ChunkCoords, int] = {}
    for cs in changes:
        nc = cs.nodes.get(path)
        if nc is None:
            continue
        if nc.deleted or nc.kinds is None:
            return None  # the node's old chunks are not listed
        for c, k in nc.kinds.items():
            was = merged.get(c)
            if was is None:
                merged[c] = k
                continue
            before, after = (was & KIND_MASK) != ADDED, (k & KIND_MASK) != REMOVED
            if before and after:
                return None  # changed, or back to what it was: only the content can tell
            if after:
                merged[c] = ADDED | (k & VIRTUAL_AFTER)
            elif before:
                merged[c] = REMOVED | (was & VIRTUAL_BEFORE)
            else:
                del merged[c]  # added, then removed again
    return merged


def _full_compare(ia: ManifestIndex, ib: ManifestIndex, reader: SnapshotReader) -> ChunkSets:
    # Shard layouts differ (the array was replaced): positions cannot be matched, compare all.
    left = {c: r.hash for c, r in iter_manifest(ia, reader)}
    right = dict(iter_manifest(ib, reader))
    added = frozenset(c for c in right if c not in left)
    removed = frozenset(c for c in left if c not in right)
    changed = frozenset(c for c, r in right.items() if c in left and left[c] != r.hash)
    virtual = frozenset(c for c in added | changed if right[c].source is not None)
    return added, changed, removed, virtual
