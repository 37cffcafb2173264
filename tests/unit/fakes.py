"""An in-memory SnapshotReader and small builders of metadata documents for model tests."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from zarrlake.model import (
    NODE_KIND,
    ChunkRef,
    IndexNode,
    ManifestIndex,
    NodeMeta,
    Root,
    Shard,
    parse_node_meta,
)
from zarrlake.model.changes import BuildResult, StagedState, build_snapshot
from zarrlake.model.manifest import content_hash


class FakeReader:
    """Holds the catalog nodes it is given, by hash; counts what it loads."""

    def __init__(self) -> None:
        self.blobs: dict[bytes, tuple[str, bytes]] = {}
        self.loads: Counter[str] = Counter()

    def add(self, blobs: Mapping[bytes, tuple[str, bytes]]) -> None:
        for h, (kind, data) in blobs.items():
            assert content_hash(data) == h, "blobs are content-addressed"
            self.blobs[h] = (kind, data)

    def put_meta(self, doc: bytes | dict[str, Any]) -> bytes:
        data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        h = content_hash(data)
        self.blobs[h] = ("meta", data)
        return h

    def prefetch_shards(self, hashes: object) -> None:
        """Nothing to prefetch in memory; loads are counted where shards are used."""

    def prefetch_index_nodes(self, hashes: object) -> None:
        """Nothing to prefetch in memory; loads are counted where nodes are used."""

    def _get(self, h: bytes, kind: str) -> bytes:
        found_kind, data = self.blobs[h]
        assert found_kind == kind, f"asked for a {kind}, holds a {found_kind}"
        self.loads[kind] += 1
        return data

    def meta_bytes(self, h: bytes) -> bytes:
        return self._get(h, "meta")

    def node_meta(self, h: bytes) -> NodeMeta:
        return parse_node_meta(self.meta_bytes(h), strict=False)

    def index(self, h: bytes) -> ManifestIndex:
        return ManifestIndex.decode(self._get(h, "index"))

    def index_node(self, h: bytes) -> IndexNode:
        return IndexNode.decode(self._get(h, NODE_KIND))

    def shard(self, h: bytes) -> Shard:
        return Shard.decode(self._get(h, "shard"))

    def root(self, h: bytes) -> Root:
        return Root.decode(self._get(h, "root"))

    def put_index(self, shard_shape: tuple[int, ...], shards: Mapping[Any, bytes]) -> bytes:
        """Store a manifest index of ``shards`` (position -> shard hash); its hash."""
        blobs: dict[bytes, tuple[str, bytes]] = {}
        index = ManifestIndex.empty(shard_shape, None).updated(dict(shards), self, blobs)
        assert index is not None
        data = index.encode()
        blobs[content_hash(data)] = ("index", data)
        self.add(blobs)
        return content_hash(data)

    def build(self, base: Root, staged: StagedState) -> BuildResult:
        """build_snapshot, then keep its new nodes (as the catalog would)."""
        result = build_snapshot(base, staged, self)
        self.add(result.blobs)
        return result


def group_doc(attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"zarr_format": 3, "node_type": "group", "attributes": dict(attrs or {})}


def array_doc(
    shape: tuple[int, ...] = (100,),
    chunks: tuple[int, ...] | None = None,
    attrs: dict[str, Any] | None = None,
    dtype: str = "int32",
) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": dtype,
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": list(chunks or (1,) * len(shape))},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": dict(attrs or {}),
    }


def ref(tag: str | int, *, small: bool = False) -> ChunkRef:
    """A distinct chunk ref per tag: inline bytes when ``small``, else an object ref."""
    data = f"chunk-{tag}".encode()
    h = hashlib.sha256(data).digest()
    return ChunkRef(h, len(data), data) if small else ChunkRef(h, 10_000)
