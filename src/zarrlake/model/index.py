"""The manifest index: a fixed-fanout tree from shard positions to shard hashes.

An array's manifest is split into shards (see :mod:`zarrlake.model.manifest`); the index says
which shards exist and where they are. It is a tree over the grid of shard positions, laid out
like a tile pyramid: a node at level ``L`` covers a block of ``block_shape ** L`` shard
positions, and holds, for each populated block of ``block_shape ** (L - 1)`` positions inside
it, the hash of the node one level down (or, at level 1, of the shard itself). Each node holds
at most ``prod(block_shape)`` (about :data:`FANOUT`) children.

The top node is stored inline in the index document that a snapshot's node entry points to,
with the shard and block shapes and the depth; every other node is its own content-addressed
catalog node (kind ``index-node``). The tree is a function of the shards alone: the depth is
the least that covers every populated position, and empty nodes are removed. So equal
manifests have equal index hashes, a diff skips every equal subtree, and a commit that changes
one shard rewrites that shard, the nodes on its path (``depth - 1`` of them) and the index
document, whatever the size of the array.

Indexes written before the tree (a JSON map of every shard) are still read; the first commit
that changes such an array writes its index as a tree.
"""

from __future__ import annotations

import json
import math
import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np

from zarrlake.errors import CatalogError
from zarrlake.model.manifest import content_hash
from zarrlake.types import ChunkCoords

__all__ = [
    "FANOUT",
    "NODE_KIND",
    "IndexNode",
    "ManifestIndex",
    "NodeLoader",
    "block_shape_for",
    "index_delta",
]

FANOUT = 256
"""About how many children one index node covers (at least 2 per dimension).

At 34 bytes per child of a 1-d array (38 for 2-d), a full node is about 9 KB, and an array of
10^5 populated shards (10^8 chunks) is a tree of depth 3: a one-chunk commit writes two such
nodes and a top node, about 20 KB, where a flat index would rewrite 7.5 MB."""

NODE_KIND = "index-node"
"""The catalog kind of an index node below the top."""

_NODE_MAGIC = b"ZLN1"
_INDEX_MAGIC = b"ZLI2"
_NODE_HEADER = struct.Struct("<4sBBI")  # magic, level, ndim, count
_INDEX_HEADER = struct.Struct("<4sBB")  # magic, depth, ndim

Entries = dict[ChunkCoords, bytes]


class NodeLoader(Protocol):
    """Loads index nodes by hash (implementations cache them)."""

    def index_node(self, h: bytes) -> IndexNode: ...
    def prefetch_index_nodes(self, hashes: Sequence[bytes]) -> None:
        """Load many nodes at once (one round trip) ahead of ``index_node`` calls."""


def block_shape_for(shard_grid: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Choose how many children per dimension an index node covers (about :data:`FANOUT`).

    Trailing dimensions are filled first up to the shard grid's extent, the leading one gets
    what is left; every dimension gets at least 2, so that the tree can grow along any of them
    by adding a level on top.
    """
    grid = list(shard_grid) if shard_grid is not None and len(shard_grid) == ndim else [0] * ndim
    shape = [2] * ndim
    budget = FANOUT
    for i in range(ndim - 1, 0, -1):
        extent = grid[i] if grid[i] > 0 else round(budget ** (1 / (i + 1)))
        shape[i] = max(2, min(extent, budget))
        budget = max(1, budget // shape[i])
    if ndim:
        shape[0] = max(2, budget)
    return tuple(shape)


@dataclass(frozen=True, slots=True)
class IndexNode:
    """One node of the tree: local child coordinates -> child hash."""

    level: int
    entries: Mapping[ChunkCoords, bytes]

    def encode(self, ndim: int) -> bytes:
        return _NODE_HEADER.pack(_NODE_MAGIC, self.level, ndim, len(self.entries)) + _pack(
            self.entries, ndim
        )

    @classmethod
    def decode(cls, data: bytes) -> IndexNode:
        try:
            magic, level, ndim, n = _NODE_HEADER.unpack_from(data, 0)
        except struct.error as exc:
            raise CatalogError("manifest index node is truncated") from exc
        if magic != _NODE_MAGIC or level < 1:
            raise CatalogError("manifest index node is corrupt or of an unknown format")
        return cls(level, _unpack(data, _NODE_HEADER.size, n, ndim))

    def child_hashes(self) -> list[bytes]:
        return list(self.entries.values())


@dataclass(frozen=True, slots=True, eq=False)
class _Virtual:
    """A node that exists only in memory: the top of a shallower tree seen one level deeper
    (compared by identity: it only ever faces a stored node or nothing)."""

    level: int
    entries: Mapping[ChunkCoords, bytes | _Virtual]


Child = bytes | _Virtual


@dataclass(frozen=True, slots=True)
class ManifestIndex:
    """The index of one array's manifest (see the module docstring).

    ``legacy`` holds the flat map of an index written before the tree; such an index has no
    block shape and depth 0.
    """

    shard_shape: tuple[int, ...]
    block_shape: tuple[int, ...]
    depth: int
    top: Mapping[ChunkCoords, bytes]
    legacy: Mapping[ChunkCoords, bytes] | None = None

    @classmethod
    def empty(cls, shard_shape: tuple[int, ...], shard_grid: Sequence[int] | None) -> ManifestIndex:
        ndim = len(shard_shape)
        return cls(shard_shape, block_shape_for(shard_grid, ndim), 1, {})

    @property
    def is_tree(self) -> bool:
        return self.legacy is None

    # -- encoding --------------------------------------------------------------------------

    def encode(self) -> bytes:
        if self.legacy is not None:
            raise CatalogError("an index in the old format is never written again")
        ndim = len(self.shard_shape)
        shapes = np.asarray(self.shard_shape + self.block_shape, "<u8").tobytes()
        return b"".join(
            [
                _INDEX_HEADER.pack(_INDEX_MAGIC, self.depth, ndim),
                shapes,
                struct.pack("<I", len(self.top)),
                _pack(self.top, ndim),
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> ManifestIndex:
        if data[:1] == b"{":
            return cls._decode_legacy(data)
        try:
            magic, depth, ndim = _INDEX_HEADER.unpack_from(data, 0)
            o = _INDEX_HEADER.size
            shapes = np.frombuffer(data, "<u8", 2 * ndim, o).tolist() if ndim else []
            o += 16 * ndim
            (n,) = struct.unpack_from("<I", data, o)
        except (struct.error, ValueError) as exc:
            raise CatalogError("manifest index is truncated") from exc
        if magic != _INDEX_MAGIC or depth < 1 or any(s < 1 for s in shapes):
            raise CatalogError("manifest index is corrupt or of an unknown format")
        top = _unpack(data, o + 4, n, ndim)
        return cls(tuple(shapes[:ndim]), tuple(shapes[ndim:]), depth, top)

    @classmethod
    def _decode_legacy(cls, data: bytes) -> ManifestIndex:
        try:
            doc = json.loads(data)
            shards = {tuple(int(x) for x in k): bytes.fromhex(v) for k, v in doc["shards"]}
            shape = tuple(int(x) for x in doc["shard_shape"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CatalogError(f"manifest index is corrupt: {exc}") from exc
        return cls(shape, (), 0, {}, shards)

    # -- lookups ---------------------------------------------------------------------------

    def shard_at(self, pos: ChunkCoords, loader: NodeLoader) -> bytes | None:
        """The hash of the shard at ``pos``, loading the nodes on its path (the walk of
        :meth:`shards_at` for one position: every chunk read starts here)."""
        if self.legacy is not None:
            return self.legacy.get(pos)
        if not self._covers(pos, self.depth):
            return None
        entries, level = self.top, self.depth
        while True:
            child = entries.get(_local(pos, self._span(level - 1), self.block_shape))
            if child is None or level == 1:
                return child
            level -= 1
            entries = _node_at(child, level, loader).entries

    def shards_at(
        self, positions: Iterable[ChunkCoords], loader: NodeLoader
    ) -> dict[ChunkCoords, bytes]:
        """The hashes of the populated shards among ``positions`` (one round trip per level
        for the nodes not cached)."""
        if self.legacy is not None:
            return {p: self.legacy[p] for p in positions if p in self.legacy}
        want = [p for p in dict.fromkeys(positions) if self._covers(p, self.depth)]
        found: dict[ChunkCoords, bytes] = {}
        groups: list[tuple[Mapping[ChunkCoords, bytes], int, list[ChunkCoords]]] = [
            (self.top, self.depth, want)
        ]
        while True:
            frontier: dict[tuple[bytes, int], list[ChunkCoords]] = defaultdict(list)
            for node_entries, level, ps in groups:
                span = self._span(level - 1)
                for p in ps:
                    child = node_entries.get(_local(p, span, self.block_shape))
                    if child is None:
                        continue
                    if level == 1:
                        found[p] = child
                    else:
                        frontier[child, level - 1].append(p)
            if not frontier:
                return found
            loader.prefetch_index_nodes([h for h, _ in frontier])
            groups = [
                (_node_at(h, level, loader).entries, level, ps)
                for (h, level), ps in frontier.items()
            ]

    def shard_items(self, loader: NodeLoader) -> Iterator[tuple[ChunkCoords, bytes]]:
        """Every (shard position, shard hash), level by level with one round trip per batch
        of nodes."""
        if self.legacy is not None:
            yield from sorted(self.legacy.items())
            return
        zero = (0,) * len(self.shard_shape)
        level_nodes: list[tuple[ChunkCoords, int, Mapping[ChunkCoords, bytes]]] = [
            (zero, self.depth, self.top)
        ]
        while level_nodes:
            nxt: list[tuple[ChunkCoords, int, bytes]] = []
            for q, level, entries in level_nodes:
                for local, h in sorted(entries.items()):
                    child = _child_pos(q, local, self.block_shape)
                    if level == 1:
                        yield child, h
                    else:
                        nxt.append((child, level - 1, h))
            level_nodes = []
            for i in range(0, len(nxt), 256):
                batch = nxt[i : i + 256]
                loader.prefetch_index_nodes([h for _, _, h in batch])
                level_nodes.extend((q, lv, _node_at(h, lv, loader).entries) for q, lv, h in batch)

    def shard_map(self, loader: NodeLoader) -> dict[ChunkCoords, bytes]:
        """Every shard position and hash, as a dict (loads the whole tree)."""
        return dict(self.shard_items(loader))

    def top_children(self) -> list[bytes]:
        """Hashes the index document references directly: nodes of level ``depth - 1``, or
        shards when the depth is 1 (or the index is in the old format)."""
        if self.legacy is not None:
            return list(self.legacy.values())
        return list(self.top.values())

    # -- updates ---------------------------------------------------------------------------

    def updated(
        self,
        changes: Mapping[ChunkCoords, bytes | None],
        loader: NodeLoader,
        blobs: dict[bytes, tuple[str, bytes]],
        *,
        shard_grid: Sequence[int] | None = None,
    ) -> ManifestIndex | None:
        """This index with shard positions set to new hashes (``None`` removes a shard), or
        ``None`` when no shard is left. New nodes are added to ``blobs``; the caller encodes
        and stores the returned index itself.

        An index in the old format is rewritten whole as a tree (``shard_grid`` chooses its
        block shape).
        """
        if self.legacy is not None:
            merged: dict[ChunkCoords, bytes | None] = dict(self.legacy)
            merged.update(changes)
            fresh = ManifestIndex.empty(self.shard_shape, shard_grid)
            return fresh.updated(merged, loader, blobs)
        ndim = len(self.shard_shape)
        written: dict[bytes, tuple[IndexNode, bytes]] = {}  # new nodes, with their encoding
        depth, top = self.depth, dict(self.top)
        need = max([depth] + [self._depth_for(p) for p, h in changes.items() if h is not None])
        while depth < need:  # grow: the old top becomes child 0 of a new top
            if top:
                top = {(0,) * ndim: self._store(IndexNode(depth, top), written)}
            depth += 1
        top = self._apply(top, depth, (0,) * ndim, changes, loader, written)
        while depth > 1 and list(top) == [(0,) * ndim]:  # shrink to the least covering depth
            node = _load_node(top[(0,) * ndim], loader, written)
            top, depth = dict(node.entries), depth - 1
        if not top:
            return None
        result = ManifestIndex(self.shard_shape, self.block_shape, depth, top)
        _keep_reachable(result.top_children(), written, blobs)
        return result

    def _apply(
        self,
        entries: dict[ChunkCoords, bytes],
        level: int,
        q: ChunkCoords,
        changes: Mapping[ChunkCoords, bytes | None],
        loader: NodeLoader,
        written: dict[bytes, tuple[IndexNode, bytes]],
    ) -> dict[ChunkCoords, bytes]:
        span = self._span(level - 1)
        groups: dict[ChunkCoords, dict[ChunkCoords, bytes | None]] = defaultdict(dict)
        for p, h in changes.items():
            if all(c // s == qq for c, s, qq in zip(p, self._span(level), q, strict=True)):
                groups[_local(p, span, self.block_shape)][p] = h
        if level > 1:
            loader.prefetch_index_nodes(
                [entries[c] for c in groups if c in entries and entries[c] not in written]
            )
        for local, sub in groups.items():
            if level == 1:
                (h,) = sub.values()
                new: bytes | None = h
            else:
                old = entries.get(local)
                child_entries = (
                    dict(_load_node(old, loader, written).entries) if old is not None else {}
                )
                child_q = _child_pos(q, local, self.block_shape)
                got = self._apply(child_entries, level - 1, child_q, sub, loader, written)
                new = self._store(IndexNode(level - 1, got), written) if got else None
            if new is None:
                entries.pop(local, None)
            else:
                entries[local] = new
        return entries

    def _store(self, node: IndexNode, written: dict[bytes, tuple[IndexNode, bytes]]) -> bytes:
        data = node.encode(len(self.shard_shape))
        h = content_hash(data)
        written[h] = (node, data)
        return h

    # -- geometry --------------------------------------------------------------------------

    def _span(self, level: int) -> tuple[int, ...]:
        """Shard positions per dimension covered by one node of ``level`` (0: a shard)."""
        return tuple(b**level for b in self.block_shape)

    def _covers(self, p: ChunkCoords, depth: int) -> bool:
        return len(p) == len(self.shard_shape) and all(
            0 <= c < s for c, s in zip(p, self._span(depth), strict=True)
        )

    def _depth_for(self, p: ChunkCoords) -> int:
        if len(p) != len(self.shard_shape) or any(c < 0 for c in p):
            raise CatalogError(f"shard position {p} is outside the manifest's grid")
        depth = 1
        for c, b in zip(p, self.block_shape, strict=True):
            if c > 0:
                depth = max(depth, math.floor(math.log(c, b)) + 1)
                while b**depth <= c:  # guard against float rounding
                    depth += 1
        return depth


def index_delta(
    before: ManifestIndex | None, after: ManifestIndex | None, loader: NodeLoader
) -> list[tuple[ChunkCoords, bytes | None, bytes | None]]:
    """(position, shard hash before, shard hash after) of every shard that differs, skipping
    every subtree whose hash is equal on both sides.

    Both indexes must share a shard shape (or one may be ``None``).
    """
    if before is None and after is None:
        return []
    trees = [i for i in (before, after) if i is not None]
    if any(not i.is_tree for i in trees) or len({i.block_shape for i in trees}) > 1:
        a = dict(before.shard_items(loader)) if before is not None else {}
        b = dict(after.shard_items(loader)) if after is not None else {}
        return [(p, a.get(p), b.get(p)) for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)]
    shape = trees[0]
    depth = max(i.depth for i in trees)
    ndim = len(shape.shard_shape)
    tops = [_lift(i, depth) if i is not None else {} for i in (before, after)]
    out: list[tuple[ChunkCoords, bytes | None, bytes | None]] = []
    pending = [((0,) * ndim, depth, tops[0], tops[1])]
    while pending:
        ahead: list[tuple[ChunkCoords, int, Child | None, Child | None]] = []
        for q, level, ea, eb in pending:
            for local in sorted({k for k, _ in ea.items() ^ eb.items()}):
                ca, cb = ea.get(local), eb.get(local)
                child = _child_pos(q, local, shape.block_shape)
                if level == 1:
                    assert not isinstance(ca, _Virtual)  # virtual nodes are never leaves
                    assert not isinstance(cb, _Virtual)
                    out.append((child, ca, cb))
                else:
                    ahead.append((child, level - 1, ca, cb))
        loader.prefetch_index_nodes(
            [c for _, _, ca, cb in ahead for c in (ca, cb) if isinstance(c, bytes)]
        )
        pending = [
            (q, lv, _entries(ca, lv, loader), _entries(cb, lv, loader)) for q, lv, ca, cb in ahead
        ]
    return out


# -- helpers ---------------------------------------------------------------------------------


def _lift(index: ManifestIndex, depth: int) -> Mapping[ChunkCoords, Child]:
    """The top entries of ``index`` seen as a tree of ``depth`` (wrapped in virtual nodes)."""
    entries: Mapping[ChunkCoords, Child] = dict(index.top)
    zero = (0,) * len(index.shard_shape)
    for level in range(index.depth, depth):
        entries = {zero: _Virtual(level, entries)} if entries else {}
    return entries


def _entries(child: Child | None, level: int, loader: NodeLoader) -> Mapping[ChunkCoords, Child]:
    if child is None:
        return {}
    if isinstance(child, _Virtual):
        return child.entries
    return _node_at(child, level, loader).entries


def _node_at(h: bytes, level: int, loader: NodeLoader) -> IndexNode:
    node = loader.index_node(h)
    if node.level != level:
        raise CatalogError(
            f"manifest index node {h.hex()[:12]} is at level {node.level}, expected {level}"
        )
    return node


def _load_node(
    h: bytes, loader: NodeLoader, written: Mapping[bytes, tuple[IndexNode, bytes]]
) -> IndexNode:
    found = written.get(h)
    return found[0] if found is not None else loader.index_node(h)


def _keep_reachable(
    roots: list[bytes],
    written: Mapping[bytes, tuple[IndexNode, bytes]],
    blobs: dict[bytes, tuple[str, bytes]],
) -> None:
    """Add to ``blobs`` the new nodes reachable from ``roots`` (a grown-then-shrunk tree can
    leave written nodes that nothing references)."""
    stack = [h for h in roots if h in written]
    while stack:
        h = stack.pop()
        if h in blobs:
            continue
        node, data = written[h]
        blobs[h] = (NODE_KIND, data)
        stack.extend(c for c in node.child_hashes() if c in written)


def _local(p: ChunkCoords, span: tuple[int, ...], block: tuple[int, ...]) -> ChunkCoords:
    return tuple((c // s) % b for c, s, b in zip(p, span, block, strict=True))


def _child_pos(q: ChunkCoords, local: ChunkCoords, block: tuple[int, ...]) -> ChunkCoords:
    return tuple(x * b + c for x, c, b in zip(q, local, block, strict=True))


def _pack(entries: Mapping[ChunkCoords, bytes], ndim: int) -> bytes:
    items = sorted(entries.items())
    coords = np.asarray([k for k, _ in items], "<u2").reshape(len(items), ndim)
    return coords.tobytes() + b"".join(h for _, h in items)


def _unpack(data: bytes, offset: int, n: int, ndim: int) -> dict[ChunkCoords, bytes]:
    end = offset + n * (2 * ndim + 32)
    if len(data) != end:
        raise CatalogError("manifest index node is corrupt: wrong length")
    keys: Iterable[ChunkCoords] = (
        map(tuple, np.frombuffer(data, "<u2", n * ndim, offset).reshape(n, ndim).tolist())
        if n * ndim
        else [()] * n
    )
    o = offset + 2 * n * ndim
    hashes = cast(list[bytes], np.frombuffer(data, np.dtype((np.void, 32)), n, o).tolist())
    out = dict(zip(keys, hashes, strict=True))
    if len(out) != n:
        raise CatalogError("manifest index node is corrupt: repeated entries")
    return out
