"""Staged changes, change sets, and building a new snapshot from a base plus staged changes.

Pure functions: every catalog read goes through a :class:`SnapshotReader` that the caller
supplies (and caches); nothing here touches SQL or files.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from zarrlake.errors import CatalogError
from zarrlake.model.batches import batch_coord_array, expand_batch
from zarrlake.model.chunkcodec import packed_chunks, unpack
from zarrlake.model.chunkset import KindArray, LazyRows, kind_array
from zarrlake.model.index import ManifestIndex, NodeLoader
from zarrlake.model.manifest import (
    ChunkRef,
    Shard,
    content_hash,
    join_coords,
    same_content,
    shard_shape_for,
    split_coords,
)
from zarrlake.model.metadata import NodeMeta, attribute_changes, chunk_owner
from zarrlake.model.snapshot import NodeEntry, Root
from zarrlake.model.staged_batches import StagedBatches, take_batches
from zarrlake.types import ChunkCoords

__all__ = [
    "ADDED",
    "CHANGED",
    "KIND_MASK",
    "REMOVED",
    "VIRTUAL_AFTER",
    "VIRTUAL_BEFORE",
    "BuildResult",
    "ChangeSet",
    "NodeChange",
    "SnapshotReader",
    "StagedNode",
    "StagedState",
    "all_exact",
    "build_snapshot",
    "changes_from_staged",
    "iter_manifest",
]


class SnapshotReader(NodeLoader, Protocol):
    """Loads immutable catalog nodes by hash (implementations cache them); index nodes as a
    :class:`NodeLoader`."""

    def meta_bytes(self, h: bytes) -> bytes: ...
    def node_meta(self, h: bytes) -> NodeMeta: ...
    def index(self, h: bytes) -> ManifestIndex: ...
    def shard(self, h: bytes) -> Shard: ...
    def prefetch_shards(self, hashes: Sequence[bytes]) -> None:
        """Load many shards at once (one round trip) ahead of ``shard`` calls."""


@dataclass(slots=True)
class StagedNode:
    """A session's changes to one node.

    ``dropped`` means the base node (metadata and every chunk) is gone; ``meta`` is the hash of
    a newly staged metadata document; ``chunks`` maps coordinates to a new ref or ``None``
    (a tombstone: zarr deleted the chunk, typically because it equals the fill value).
    """

    dropped: bool = False
    meta: bytes | None = None
    chunks: dict[ChunkCoords, ChunkRef | None] = field(default_factory=dict)
    # virtual references staged a shard at a time (:mod:`zarrlake.model.batches`): shard
    # position -> its entries, positions taken with ``batch_shape``; ``chunks`` win over them
    batches: StagedBatches = field(default_factory=StagedBatches)
    batch_shape: tuple[int, ...] = ()

    def all_chunks(self) -> dict[ChunkCoords, ChunkRef | None]:
        """``chunks`` with the batches' entries under them, as one mapping."""
        if not self.batches:
            return self.chunks
        out: dict[ChunkCoords, ChunkRef | None] = {}
        for pos in self.batches:
            out.update(expand_batch(pos, self.batches[pos], self.batch_shape))
        out.update(self.chunks)
        return out


@dataclass(slots=True)
class StagedState:
    nodes: dict[str, StagedNode] = field(default_factory=dict)
    raw: dict[str, ChunkRef | None] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not self.nodes and not self.raw

    def expanded(self) -> StagedState:
        """The same changes with every batch expanded into chunks (for the consumers that
        look at staged chunks one by one: conflicts, rebases, listings)."""
        if not any(sn.batches for sn in self.nodes.values()):
            return self
        nodes = {
            p: StagedNode(sn.dropped, sn.meta, sn.all_chunks()) if sn.batches else sn
            for p, sn in self.nodes.items()
        }
        return StagedState(nodes, dict(self.raw))

    def node(self, path: str) -> StagedNode:
        sn = self.nodes.get(path)
        if sn is None:
            sn = self.nodes[path] = StagedNode()
        return sn


# How a commit changed one chunk (a :attr:`NodeChange.kinds` value): one of the first three,
# plus a flag for each side whose content is a virtual reference.
ADDED, CHANGED, REMOVED = 1, 2, 3
VIRTUAL_AFTER, VIRTUAL_BEFORE = 4, 8
KIND_MASK = 3  # the bits that hold which of the first three


@dataclass(frozen=True, slots=True)
class NodeChange:
    """What one commit (or session) did to one node.

    ``kinds``, recorded by :func:`build_snapshot`, says for each of ``chunks`` whether the
    commit added, changed or removed it against its first parent, and which sides are virtual
    references: enough for a diff of the commit against its parent to need no manifest.
    ``None`` where that is not known exactly (a session's staged changes, a commit written by
    an older version, a node whose chunks were all replaced).
    """

    created: bool = False
    deleted: bool = False
    structure: bool = False  # shape, chunks, dtype, codecs, fill value, ... changed
    attrs: frozenset[str] = frozenset()  # attribute keys changed
    chunks: AbstractSet[ChunkCoords] = frozenset()
    node_type: str = ""
    kinds: Mapping[ChunkCoords, int] | None = field(default=None, compare=False)

    @property
    def meta_changed(self) -> bool:
        return self.structure or bool(self.attrs)

    @property
    def touched(self) -> bool:
        return self.created or self.deleted or self.meta_changed or bool(self.chunks)


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The changes one commit made, by node path; stored with every commit.

    ``exact`` (set by :func:`build_snapshot`): every node whose snapshot entry differs from
    the first parent's is listed if any of its chunks changed, with ``kinds`` unless they are
    not known; a node not listed has no changed chunk.
    """

    nodes: Mapping[str, NodeChange] = field(default_factory=dict)
    raw: frozenset[str] = frozenset()
    exact: bool = False

    def is_empty(self) -> bool:
        return not self.raw and not any(c.touched for c in self.nodes.values())

    def encode(self) -> bytes:
        out: dict[str, object] = {}
        for path, c in sorted(self.nodes.items()):
            item: dict[str, object] = {}
            if c.created:
                item["c"] = 1
            if c.deleted:
                item["d"] = 1
            if c.structure:
                item["s"] = 1
            if c.attrs:
                item["a"] = sorted(c.attrs)
            if c.node_type:
                item["t"] = c.node_type
            ndim, coords, kinds = packed_chunks(c.chunks, c.kinds)
            if coords is not None:
                item["k"] = [len(c.chunks), ndim, coords]
            if kinds is not None:
                item["m"] = kinds
            out[path] = item
        doc: dict[str, object] = {"v": 1, "nodes": out, "raw": sorted(self.raw)}
        if self.exact:
            doc["x"] = 1
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> ChangeSet:
        try:
            return cls._decode(data)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            raise CatalogError(f"change set is corrupt: {exc}") from exc

    @classmethod
    def _decode(cls, data: bytes) -> ChangeSet:
        doc = json.loads(data)
        nodes: dict[str, NodeChange] = {}
        for path, item in doc["nodes"].items():
            order: list[ChunkCoords] = []
            if "k" in item:
                n, ndim, b64 = item["k"]
                if ndim == 0:
                    order = [()]
                else:
                    arr = np.frombuffer(unpack(b64), "<i8").reshape(n, ndim)
                    order = list(map(tuple, arr.tolist()))
            chunks = frozenset(order)
            kinds: dict[ChunkCoords, int] | None = None
            if "m" in item:  # how each chunk changed, in the order of the coordinates
                values = np.frombuffer(unpack(item["m"]), np.uint8).tolist()
                if len(values) != len(order):
                    raise ValueError(f"{len(values)} chunk kinds for {len(order)} chunks")
                kinds = dict(zip(order, values, strict=True))
            nodes[path] = NodeChange(
                created=bool(item.get("c")),
                deleted=bool(item.get("d")),
                structure=bool(item.get("s")),
                attrs=frozenset(item.get("a", ())),
                chunks=chunks,
                node_type=item.get("t", ""),
                kinds=kinds,
            )
        return cls(nodes, frozenset(doc["raw"]), bool(doc.get("x")))


def all_exact(changes: Sequence[ChangeSet]) -> bool:
    """Whether ``changes`` (those of a line of commits) are some, and all exact: then a diff
    across them needs no manifest, except for a node they cannot answer for."""
    return bool(changes) and all(cs.exact for cs in changes)


def _meta_change(reader: SnapshotReader, old: bytes, new: bytes) -> tuple[bool, frozenset[str]]:
    if old == new:
        return False, frozenset()
    a, b = reader.node_meta(old), reader.node_meta(new)
    if a.node_type == "unknown" or b.node_type == "unknown":
        return True, frozenset()
    return a.structure != b.structure, frozenset(attribute_changes(a.attributes, b.attributes))


def changes_from_staged(base: Root, staged: StagedState, reader: SnapshotReader) -> ChangeSet:
    """The change set a session's staged changes make against ``base`` (for conflict checks).

    Every staged chunk counts as written, even if its bytes equal the base's.
    """
    staged = staged.expanded()
    nodes: dict[str, NodeChange] = {}
    for path, sn in staged.nodes.items():
        old = base.nodes.get(path)
        deleted = sn.dropped and old is not None
        current = None if sn.dropped else old
        new_meta = sn.meta if sn.meta is not None else (current.meta if current else None)
        created = new_meta is not None and (old is None or sn.dropped)
        structure, attrs = False, frozenset[str]()
        if current is not None and sn.meta is not None:
            structure, attrs = _meta_change(reader, current.meta, sn.meta)
        nodes[path] = NodeChange(
            created=created,
            deleted=deleted,
            structure=structure,
            attrs=attrs,
            chunks=frozenset(sn.chunks),
        )
    return ChangeSet(nodes, frozenset(staged.raw))


@dataclass(frozen=True, slots=True)
class BuildResult:
    root: Root
    root_hash: bytes
    blobs: dict[bytes, tuple[str, bytes]]  # hash -> (kind, bytes): new catalog nodes to insert
    changes: ChangeSet
    # new shards that are batches the session staged, as the catalog holds them: hash -> a
    # read of their bytes (the catalog copies them itself; :mod:`.staged_batches`)
    staged: dict[bytes, Callable[[], bytes]] = field(default_factory=dict)


def build_snapshot(base: Root, staged: StagedState, reader: SnapshotReader) -> BuildResult:
    """Apply staged changes to ``base``; return the new root, its new nodes and its change set.

    Only the shards that staged chunks fall in are loaded and rewritten; everything else is
    shared with ``base`` by hash.
    """
    staged = claim_raw_chunks(base, staged, reader)
    blobs: dict[bytes, tuple[str, bytes]] = {}
    taken: dict[bytes, Callable[[], bytes]] = {}
    nodes = dict(base.nodes)
    changes: dict[str, NodeChange] = {}
    for path, sn in staged.nodes.items():
        old = base.nodes.get(path)
        current = None if sn.dropped else old
        meta = sn.meta if sn.meta is not None else (current.meta if current else None)
        if meta is None:
            nodes.pop(path, None)
            if old is not None:
                changes[path] = NodeChange(deleted=True, node_type=old.node_type)
            continue
        nm = reader.node_meta(meta)
        structure, attrs = False, frozenset[str]()
        if current is not None:
            structure, attrs = _meta_change(reader, current.meta, meta)
        kinds: Mapping[ChunkCoords, int] | None = {}
        manifest: bytes | None = None
        if nm.is_array:
            index: ManifestIndex | None = None
            if (
                current is not None
                and current.manifest is not None
                and reader.node_meta(current.meta).ndim == nm.ndim
            ):
                index = reader.index(current.manifest)
            # chunks staged before the metadata changed the number of dimensions are keys
            # the array no longer has: no read finds them, and the commit drops them
            chunks = {c: r for c, r in sn.chunks.items() if len(c) == nm.ndim}
            batches = sn.batches if len(sn.batch_shape) == nm.ndim else StagedBatches()
            if index is not None and not chunks and not batches:
                manifest = current.manifest if current is not None else None
            else:
                manifest, kinds = _apply_chunks(
                    index, nm, chunks, reader, blobs, batches, sn.batch_shape, taken
                )
            if index is None and current is not None and current.manifest is not None:
                kinds = None  # the number of dimensions changed: every old chunk is gone
        elif current is not None and current.manifest is not None:
            kinds = None  # an array became a group: its chunks are gone
        changed_chunks = kinds.chunks if isinstance(kinds, KindArray) else frozenset(kinds or ())
        entry = NodeEntry(nm.node_type, meta, manifest)
        nodes[path] = entry
        change = NodeChange(
            created=old is None or sn.dropped,
            deleted=old is not None and sn.dropped,
            structure=structure,
            attrs=attrs,
            chunks=changed_chunks,
            node_type=nm.node_type,
            kinds=kinds,
        )
        if change.touched:
            changes[path] = change
    raw = dict(base.raw)
    raw_changed: set[str] = set()
    for key, ref in staged.raw.items():
        if not same_content(raw.get(key), ref):
            raw_changed.add(key)
        if ref is None:
            raw.pop(key, None)
        else:
            raw[key] = ref
    root = Root(nodes, raw)
    data = root.encode()
    root_hash = content_hash(data)
    blobs[root_hash] = ("root", data)
    return BuildResult(
        root, root_hash, blobs, ChangeSet(changes, frozenset(raw_changed), exact=True), taken
    )


def claim_raw_chunks(base: Root, staged: StagedState, reader: SnapshotReader) -> StagedState:
    """Staged raw keys that are chunk keys of an array of the resulting hierarchy, staged as
    that array's chunks.

    A key is staged raw when no array claims it at the time it is written: a copy from
    another store writes keys in sorted order, so ``a/c/0`` comes before ``a/zarr.json``.
    Once the array exists the key is one of its chunks, and must be committed as one (else the
    array would read back as fill values). A chunk staged as such afterwards wins.
    """
    if not staged.raw:
        return staged
    metas = {path: node.meta for path, node in base.nodes.items()}
    for path, sn in staged.nodes.items():
        if sn.meta is not None:
            metas[path] = sn.meta
        elif sn.dropped:
            metas.pop(path, None)
    arrays = {}
    for path, h in metas.items():
        nm = reader.node_meta(h)
        if nm.is_array:
            arrays[path] = nm
    if not arrays:
        return staged
    nodes = {
        p: StagedNode(sn.dropped, sn.meta, dict(sn.chunks), sn.batches, sn.batch_shape)
        for p, sn in staged.nodes.items()
    }
    out = StagedState(nodes, {})
    for key, ref in staged.raw.items():
        found = chunk_owner(key, arrays.get)
        if found is None:
            out.raw[key] = ref
            continue
        sn = out.node(found[0])
        if not _in_batch(sn, found[1]):  # a batch staged as the array's chunks wins, too
            sn.chunks.setdefault(found[1], ref)
    return out


def _in_batch(sn: StagedNode, coords: ChunkCoords) -> bool:
    if not sn.batches or len(coords) != len(sn.batch_shape):
        return False
    return sn.batches.holds(*split_coords(coords, sn.batch_shape))


def _apply_chunks(
    index: ManifestIndex | None,
    nm: NodeMeta,
    updates: Mapping[ChunkCoords, ChunkRef | None],
    reader: SnapshotReader,
    blobs: dict[bytes, tuple[str, bytes]],
    batches: StagedBatches | None = None,
    batch_shape: tuple[int, ...] = (),
    taken: dict[bytes, Callable[[], bytes]] | None = None,
) -> tuple[bytes | None, Mapping[ChunkCoords, int]]:
    """The new manifest, and how each chunk whose content changed changed (``kinds``; a
    :class:`~zarrlake.model.chunkset.KindArray` when whole new shards were taken as staged).
    ``batches``: virtual references staged a shard at a time (positions of ``batch_shape``),
    under ``updates``; a batch left in the catalog that becomes a new shard as it is goes in
    ``taken``, not ``blobs``."""
    if not updates and not batches:
        return None, {}
    if index is not None:
        shard_shape = index.shard_shape
    elif batches:  # a new array takes the shape its references were staged with
        shard_shape = batch_shape
    else:
        shard_shape = shard_shape_for(nm.grid_shape, nm.ndim)
    shard_grid = _shard_grid(nm.grid_shape, shard_shape)
    if index is None:
        index = ManifestIndex.empty(shard_shape, shard_grid)
    direct: list[ChunkCoords] = []
    if batches:
        updates, direct = take_batches(index, updates, batches, batch_shape, reader)
    by_shard: dict[ChunkCoords, dict[int, ChunkRef | None]] = defaultdict(dict)
    for coords, ref in updates.items():
        pos, flat = split_coords(coords, shard_shape)
        by_shard[pos][flat] = ref
    current = index.shards_at(by_shard, reader)
    if len(current) > 1:
        reader.prefetch_shards(list(current.values()))
    changed: dict[ChunkCoords, int] = {}
    new_hashes: dict[ChunkCoords, bytes | None] = {}
    for pos, ups in by_shard.items():
        old_hash = current.get(pos)
        old = reader.shard(old_hash) if old_hash is not None else Shard.empty()
        if len(old) == 0:
            for f, r in ups.items():
                if r is not None:
                    changed[join_coords(pos, f, shard_shape)] = _kind_of(None, r)
        else:
            for f, r in ups.items():
                was = old.get(f)
                if not same_content(was, r):
                    changed[join_coords(pos, f, shard_shape)] = _kind_of(was, r)
        new = old.apply(ups)
        if len(new) == 0:
            if old_hash is not None:
                new_hashes[pos] = None
            continue
        data = new.encode()
        h = content_hash(data)
        if h != old_hash:
            blobs[h] = ("shard", data)
            new_hashes[pos] = h
    added: list[tuple[LazyRows, int]] = []  # the chunks of the new shards
    # new shards, as staged (nothing to merge them with), in order: their chunks then come in
    # the order a change set is encoded in wherever shards span the trailing dimensions
    for pos in sorted(direct):
        assert batches is not None
        left = batches.staged_hash(pos) if taken is not None else None
        if left is not None and taken is not None:  # its bytes stay in the catalog until
            taken[left] = _encoded(batches, pos)  # the commit copies them
            new_hashes[pos] = left
        else:
            data = batches[pos].encode()
            new_hashes[pos] = h = content_hash(data)
            blobs[h] = ("shard", data)
        # the new shard's chunks, made when the change set asks
        rows = LazyRows(
            batches.count(pos), functools.partial(_batch_rows, batches, pos, shard_shape)
        )
        added.append((rows, _ADDED_VIRTUAL))
    kinds = kind_array(len(shard_shape), changed, added) if added else changed
    if not new_hashes and index.is_tree:
        return (_store_index(index, blobs) if index.top else None), kinds
    updated = index.updated(new_hashes, reader, blobs, shard_grid=shard_grid)
    if updated is None:
        return None, kinds
    return _store_index(updated, blobs), kinds


_ADDED_VIRTUAL = ADDED | VIRTUAL_AFTER


def _batch_rows(batches: StagedBatches, pos: ChunkCoords, shape: tuple[int, ...]) -> np.ndarray:
    return batch_coord_array(pos, batches.flat(pos), shape)


def _encoded(batches: StagedBatches, pos: ChunkCoords) -> Callable[[], bytes]:
    return lambda: batches[pos].encode()


def _virtual(ref: ChunkRef | None, flag: int) -> int:
    return flag if ref is not None and ref.source is not None else 0


def _kind_of(was: ChunkRef | None, now: ChunkRef | None) -> int:
    """The :attr:`NodeChange.kinds` value of a chunk whose content changed from ``was``."""
    kind = ADDED if was is None else REMOVED if now is None else CHANGED
    return kind | _virtual(now, VIRTUAL_AFTER) | _virtual(was, VIRTUAL_BEFORE)


def _store_index(index: ManifestIndex, blobs: dict[bytes, tuple[str, bytes]]) -> bytes:
    data = index.encode()
    h = content_hash(data)
    blobs[h] = ("index", data)
    return h


def _shard_grid(
    grid_shape: tuple[int, ...] | None, shard_shape: tuple[int, ...]
) -> tuple[int, ...] | None:
    if grid_shape is None or len(grid_shape) != len(shard_shape):
        return None
    return tuple(-(-g // s) for g, s in zip(grid_shape, shard_shape, strict=True))


def iter_manifest(
    index: ManifestIndex, reader: SnapshotReader
) -> Iterable[tuple[ChunkCoords, ChunkRef]]:
    """Every (coords, ref) of an array's manifest, shard by shard."""
    for pos, h in index.shard_items(reader):
        shard = reader.shard(h)
        for flat, ref in shard.items():
            yield join_coords(pos, flat, index.shard_shape), ref
