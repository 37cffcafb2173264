"""What a store shows: the keys of a snapshot plus a session's staged changes.

Every key is shown once, and only when a read of it finds something: zarr's consumers
(xarray, consolidation, copy tools) trust a listing and the reads of what it lists to agree.
A key means what :func:`~zarrlake.model.metadata.chunk_owner` says it means, as it does for
reads and commits:

- ``<node>/zarr.json`` is a node's metadata;
- a key that an array's chunk key encoding spells is that array's chunk. A chunk staged as
  such wins; else a key staged before its array existed (a copy writes ``a/c/0`` before
  ``a/zarr.json``), which the commit makes the chunk; else the chunk of the base commit. A
  chunk outside the array's grid (left by a shrinking resize) is not shown;
- any other key is a plain key. A plain key of the base commit whose name an array has since
  claimed is hidden behind that array's chunk (it shows again if the array goes).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from zarrlake.model.changes import SnapshotReader, StagedNode, StagedState, iter_manifest
from zarrlake.model.manifest import ChunkRef
from zarrlake.model.metadata import NodeMeta, chunk_owner, format_chunk_key
from zarrlake.model.snapshot import Root
from zarrlake.types import ChunkCoords

__all__ = ["ViewEntry", "view_entries"]


@dataclass(frozen=True, slots=True)
class ViewEntry:
    """One key a store shows: a node's metadata (``meta``, the document's hash) or the ref of
    a chunk or plain key (``ref``)."""

    key: str
    meta: bytes | None = None
    ref: ChunkRef | None = None


class _Nodes:
    """The nodes of the view: metadata hash and parsed metadata by path."""

    def __init__(self, base: Root, staged: StagedState, reader: SnapshotReader) -> None:
        self.reader = reader
        self.meta: dict[str, bytes] = {}
        for path in set(base.nodes) | set(staged.nodes):
            sn = staged.nodes.get(path, StagedNode())
            node = None if sn.dropped else base.nodes.get(path)
            h = sn.meta if sn.meta is not None else (node.meta if node else None)
            if h is not None:
                self.meta[path] = h
        self.paths = sorted(self.meta)
        self._parsed: dict[str, NodeMeta] = {}

    def node_meta(self, path: str) -> NodeMeta | None:
        h = self.meta.get(path)
        if h is None:
            return None
        nm = self._parsed.get(path)
        if nm is None:
            nm = self._parsed[path] = self.reader.node_meta(h)
        return nm

    def owner(self, key: str) -> tuple[str, ChunkCoords] | None:
        return chunk_owner(key, self.node_meta)

    def has_nodes_under(self, path: str) -> bool:
        node_prefix = f"{path}/" if path else ""
        i = bisect.bisect_left(self.paths, node_prefix)
        if i < len(self.paths) and self.paths[i] == path:  # the root itself
            i += 1
        return i < len(self.paths) and self.paths[i].startswith(node_prefix)


def view_entries(
    base: Root, staged: StagedState, reader: SnapshotReader, prefix: str = ""
) -> list[ViewEntry]:
    """Every key of ``base`` plus ``staged`` under ``prefix`` (a plain string prefix, as zarr
    means it), sorted by key, each once and each readable."""
    nodes = _Nodes(base, staged, reader)
    out: list[ViewEntry] = []
    # plain keys; keys staged plain that an array now claims become its chunks
    claims: dict[str, dict[ChunkCoords, ChunkRef | None]] = {}
    raw: dict[str, ChunkRef | None] = {k: r for k, r in base.raw.items() if k.startswith(prefix)}
    raw.update((k, r) for k, r in staged.raw.items() if k.startswith(prefix))
    for key, ref in raw.items():
        owner = nodes.owner(key)
        if owner is None:
            if ref is not None:
                out.append(ViewEntry(key, ref=ref))
        elif key in staged.raw:
            claims.setdefault(owner[0], {})[owner[1]] = ref
    for path in nodes.paths:
        node_prefix = f"{path}/" if path else ""
        if not (node_prefix.startswith(prefix) or prefix.startswith(node_prefix)):
            continue
        if (node_prefix + "zarr.json").startswith(prefix):
            out.append(ViewEntry(node_prefix + "zarr.json", meta=nodes.meta[path]))
        nm = nodes.node_meta(path)
        if nm is not None and nm.is_array:
            out.extend(_chunks(base, staged, nodes, path, nm, claims.get(path, {}), prefix))
    out.sort(key=lambda e: e.key)
    return out


def _chunks(
    base: Root,
    staged: StagedState,
    nodes: _Nodes,
    path: str,
    nm: NodeMeta,
    claimed: dict[ChunkCoords, ChunkRef | None],
    prefix: str,
) -> Iterator[ViewEntry]:
    sn = staged.nodes.get(path, StagedNode())
    node = None if sn.dropped else base.nodes.get(path)
    reader = nodes.reader
    chunks: dict[ChunkCoords, ChunkRef | None] = {}
    # base chunks are readable while the array keeps its number of dimensions
    if (
        node is not None
        and node.manifest is not None
        and reader.node_meta(node.meta).ndim == nm.ndim
    ):
        chunks.update(iter_manifest(reader.index(node.manifest), reader))
    chunks.update(claimed)
    chunks.update(sn.chunks)
    node_prefix = f"{path}/" if path else ""
    # a node below this array can claim some of its keys (zarr never makes one, a store may)
    nested = nodes.has_nodes_under(path)
    for coords, ref in chunks.items():
        if ref is None or len(coords) != nm.ndim or not nm.in_grid(coords):
            continue
        key = node_prefix + format_chunk_key(coords, nm.encoding)
        if key.startswith(prefix) and (not nested or nodes.owner(key) == (path, coords)):
            yield ViewEntry(key, ref=ref)
