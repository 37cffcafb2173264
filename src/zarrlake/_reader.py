"""A process-wide cache of immutable catalog nodes (roots, manifests, metadata, change sets)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from zarrlake.catalog import Catalog
from zarrlake.model import ChangeSet, ManifestIndex, NodeMeta, Root, Shard, parse_node_meta

__all__ = ["CatalogReader"]


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = make()
        with self.lock:
            self.data[key] = value
            if len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


class CatalogReader:
    """Loads catalog nodes by hash; they never change, so they are cached forever (LRU)."""

    def __init__(self, catalog: Catalog, repo_id: int, *, shard_cache: int = 512) -> None:
        self.catalog = catalog
        self.repo_id = repo_id
        self._small = _LRU(8192)
        self._shards = _LRU(shard_cache)

    def _blob(self, h: bytes) -> bytes:
        return self.catalog.get_blob(self.repo_id, h)

    def prime(self, h: bytes, kind: str, data: bytes) -> None:
        """Seed the cache with a node this process just wrote (the next commit or read of
        this process starts from it, so it would otherwise be read straight back)."""
        if kind == "meta":
            self._small.get(("m", h), lambda: data)
        elif kind == "shard":
            self._shards.get(h, lambda: Shard.decode(data))
        elif kind == "index":
            self._small.get(("i", h), lambda: ManifestIndex.decode(data))
        elif kind == "changes":
            self._small.get(("c", h), lambda: ChangeSet.decode(data))

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

    def shard(self, h: bytes) -> Shard:
        return self._shards.get(h, lambda: Shard.decode(self._blob(h)))  # type: ignore[no-any-return]

    def root(self, h: bytes) -> Root:
        return self._small.get(("r", h), lambda: Root.decode(self._blob(h)))  # type: ignore[no-any-return]

    def changes(self, h: bytes) -> ChangeSet:
        return self._small.get(("c", h), lambda: ChangeSet.decode(self._blob(h)))  # type: ignore[no-any-return]
