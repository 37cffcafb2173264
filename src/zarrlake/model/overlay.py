"""A snapshot reader over nodes not stored yet (a session's or merge's would-be commit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from zarrlake.model.changes import SnapshotReader
from zarrlake.model.index import IndexNode, ManifestIndex
from zarrlake.model.manifest import Shard
from zarrlake.model.metadata import NodeMeta, parse_node_meta

__all__ = ["Overlay"]


class Overlay:
    """A snapshot reader that also knows nodes not yet stored (a session's would-be commit):
    ``blobs`` (hash -> (kind, bytes)), and ``staged``, shards the commit takes from its
    session's staged batches (hash -> a read of their bytes, made when one is asked for)."""

    def __init__(
        self,
        reader: SnapshotReader,
        blobs: Mapping[bytes, tuple[str, bytes]],
        staged: Mapping[bytes, Callable[[], bytes]] | None = None,
    ) -> None:
        self.reader = reader
        self.blobs = blobs
        self.staged = staged or {}

    def meta_bytes(self, h: bytes) -> bytes:
        found = self.blobs.get(h)
        return found[1] if found is not None else self.reader.meta_bytes(h)

    def node_meta(self, h: bytes) -> NodeMeta:
        found = self.blobs.get(h)
        if found is None:
            return self.reader.node_meta(h)
        return parse_node_meta(found[1], strict=False)

    def index(self, h: bytes) -> ManifestIndex:
        found = self.blobs.get(h)
        return ManifestIndex.decode(found[1]) if found is not None else self.reader.index(h)

    def index_node(self, h: bytes) -> IndexNode:
        found = self.blobs.get(h)
        return IndexNode.decode(found[1]) if found is not None else self.reader.index_node(h)

    def prefetch_index_nodes(self, hashes: Sequence[bytes]) -> None:
        self.reader.prefetch_index_nodes([h for h in hashes if h not in self.blobs])

    def shard(self, h: bytes) -> Shard:
        found = self.blobs.get(h)
        if found is not None:
            return Shard.decode(found[1])
        read = self.staged.get(h)
        return Shard.decode(read()) if read is not None else self.reader.shard(h)

    def prefetch_shards(self, hashes: Sequence[bytes]) -> None:
        self.reader.prefetch_shards(
            [h for h in hashes if h not in self.blobs and h not in self.staged]
        )
