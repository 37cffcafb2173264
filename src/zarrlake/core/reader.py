"""A per-repo cache of immutable catalog nodes (roots, manifests, metadata, change sets)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from zarrlake.catalog.interface import NodeStore
from zarrlake.model import (
    NODE_KIND,
    ChangeSet,
    IndexNode,
    ManifestIndex,
    NodeMeta,
    Root,
    Shard,
    parse_node_meta,
)

__all__ = ["CatalogReader"]

_PREFETCH_METAS = 64  # a root with more nodes loads their documents as they are opened


class _LRU:
    """A thread-safe LRU cache that loads each missing key once, however many threads ask
    for it at the same time (zarr reads several keys of one node concurrently)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.loading: dict[Any, threading.Event] = {}

    def has(self, key: Any) -> bool:
        with self.lock:
            return key in self.data

    def put(self, key: Any, value: Any) -> None:
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            if len(self.data) > self.size:
                self.data.popitem(last=False)

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        while True:
            with self.lock:
                if key in self.data:
                    self.data.move_to_end(key)
                    return self.data[key]
                busy = self.loading.get(key)
                if busy is None:
                    busy = self.loading[key] = threading.Event()
                    break
            busy.wait()  # another thread is loading it; then look again (it may have failed)
        try:
            value = make()
            self.put(key, value)
            return value
        finally:
            with self.lock:
                del self.loading[key]
            busy.set()


class CatalogReader:
    """Loads catalog nodes by hash; they never change, so they are cached forever (LRU)."""

    def __init__(self, nodes: NodeStore, *, shard_cache: int = 512, node_cache: int = 4096) -> None:
        self.nodes = nodes
        self._small = _LRU(8192)
        self._shards = _LRU(shard_cache)
        self._nodes = _LRU(node_cache)  # index nodes, about 9 KB each when full

    def _blob(self, h: bytes) -> bytes:
        return self.nodes.get(h)

    def prime(self, h: bytes, kind: str, data: bytes) -> None:
        """Seed the cache with a node this process just wrote (the next commit or read of
        this process starts from it, so it would otherwise be read straight back)."""
        if kind == "meta":
            self._small.get(("m", h), lambda: data)
        elif kind == "shard":
            self._shards.get(h, lambda: Shard.decode(data))
        elif kind == "index":
            self._small.get(("i", h), lambda: ManifestIndex.decode(data))
        elif kind == NODE_KIND:
            self._nodes.get(h, lambda: IndexNode.decode(data))
        elif kind == "changes":
            self._small.get(("c", h), lambda: ChangeSet.decode(data))

    def prime_changes(self, h: bytes, changes: ChangeSet) -> None:
        """Seed the cache with a change set this process just built and stored."""
        self._small.get(("c", h), lambda: changes)

    def prime_root(self, h: bytes, root: Root) -> None:
        """Seed the cache with a decoded snapshot root."""
        self._small.get(("r", h), lambda: root)

    def meta_bytes(self, h: bytes) -> bytes:
        return self._small.get(("m", h), lambda: self._blob(h))  # type: ignore[no-any-return]

    def node_meta(self, h: bytes) -> NodeMeta:
        return self._small.get(  # type: ignore[no-any-return]
            ("n", h), lambda: parse_node_meta(self.meta_bytes(h), strict=False)
        )

    def index(self, h: bytes) -> ManifestIndex:
        return self._small.get(("i", h), lambda: ManifestIndex.decode(self._blob(h)))  # type: ignore[no-any-return]

    def index_node(self, h: bytes) -> IndexNode:
        return self._nodes.get(h, lambda: IndexNode.decode(self._blob(h)))  # type: ignore[no-any-return]

    def prefetch_index_nodes(self, hashes: Sequence[bytes]) -> None:
        """Load the index nodes not cached yet in one query per few hundred."""
        self._prefetch(self._nodes, hashes, IndexNode.decode)

    def prefetch_shards(self, hashes: Sequence[bytes]) -> None:
        """Load the shards not cached yet in one query per few hundred (a diff or a commit
        touching many shards would otherwise pay one catalog round trip per shard)."""
        self._prefetch(self._shards, hashes, Shard.decode)

    def _prefetch(
        self, cache: _LRU, hashes: Sequence[bytes], decode: Callable[[bytes], Any]
    ) -> None:
        missing = [h for h in dict.fromkeys(hashes) if not cache.has(h)]
        if not missing:
            return
        for h, (_kind, data) in self.nodes.get_many(missing).items():
            cache.put(h, decode(data))

    def shard(self, h: bytes) -> Shard:
        return self._shards.get(h, lambda: Shard.decode(self._blob(h)))  # type: ignore[no-any-return]

    def has_root(self, h: bytes) -> bool:
        return self._small.has(("r", h))

    def prime_root_bytes(self, h: bytes, data: bytes) -> Root:
        root = self._decode_root(data)
        self._small.put(("r", h), root)
        return root

    def prime_roots(self, items: Sequence[tuple[bytes, bytes]], *, manifests: bool = True) -> None:
        """Seed the cache with roots read along with their commits (hash, bytes); the top
        documents of those not cached yet are loaded together, in one query (``manifests``:
        with the top of each array's manifest index, which a read starts at and a diff of a
        commit against its parent does not need)."""
        roots = []
        for h, data in items:
            if not self._small.has(("r", h)):
                root = Root.decode(data)
                self._small.put(("r", h), root)
                roots.append(root)
        small = [r for r in roots if len(r.nodes) <= _PREFETCH_METAS]
        self._prefetch_tops(small, manifests=manifests)

    def root(self, h: bytes) -> Root:
        return self._small.get(("r", h), lambda: self._decode_root(self._blob(h)))  # type: ignore[no-any-return]

    def _decode_root(self, data: bytes) -> Root:
        root = Root.decode(data)
        if len(root.nodes) <= _PREFETCH_METAS:
            self._prefetch_tops([root])
        return root

    def _prefetch_tops(self, roots: Sequence[Root], *, manifests: bool = True) -> None:
        """Load the metadata documents and manifest index documents of small hierarchies in
        one query: opening a node reads its own and its parents' documents, and reading a
        chunk starts at its array's index."""
        nodes = [n for root in roots for n in root.nodes.values()]
        want = [n.meta for n in nodes if not self._small.has(("m", n.meta))]
        if manifests:
            want += [
                n.manifest
                for n in nodes
                if n.manifest is not None and not self._small.has(("i", n.manifest))
            ]
        if not want:
            return
        for h, (kind, data) in self.nodes.get_many(list(dict.fromkeys(want))).items():
            if kind == "meta":
                self._small.put(("m", h), data)
            elif kind == "index" and data[:1] != b"{":  # old flat indexes can be large
                self._small.put(("i", h), ManifestIndex.decode(data))

    def prefetch_changes(self, hashes: Sequence[bytes]) -> None:
        """Load the change sets not cached yet in one query per few hundred."""
        missing = [h for h in dict.fromkeys(hashes) if not self._small.has(("c", h))]
        if missing:
            for h, (_kind, data) in self.nodes.get_many(missing).items():
                self._small.put(("c", h), ChangeSet.decode(data))

    def changes(self, h: bytes) -> ChangeSet:
        return self._small.get(("c", h), lambda: ChangeSet.decode(self._blob(h)))  # type: ignore[no-any-return]
