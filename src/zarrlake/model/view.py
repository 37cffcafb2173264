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

import numpy as np

from zarrlake.model.changes import SnapshotReader, StagedNode, StagedState
from zarrlake.model.manifest import ChunkRef
from zarrlake.model.metadata import NodeMeta, chunk_owner, format_chunk_key
from zarrlake.model.snapshot import Root
from zarrlake.types import ChunkCoords

__all__ = ["ViewEntry", "view_children", "view_entries", "view_keys", "view_nodes"]


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


def view_nodes(base: Root, staged: StagedState, reader: SnapshotReader) -> dict[str, str]:
    """Every node of the view, sorted by path (``""`` is the root): path -> its node type
    (``"group"``, ``"array"``). Reads node metadata only, never a chunk listing."""
    nodes = _Nodes(base, staged, reader)
    out: dict[str, str] = {}
    for path in nodes.paths:
        nm = nodes.node_meta(path)
        if nm is not None:
            out[path] = nm.node_type
    return out


def view_entries(
    base: Root, staged: StagedState, reader: SnapshotReader, prefix: str = ""
) -> list[ViewEntry]:
    """Every key of ``base`` plus ``staged`` under ``prefix`` (a plain string prefix, as zarr
    means it), sorted by key, each once and each readable, with what it holds."""
    return [
        ViewEntry(key, meta, ref if isinstance(ref, ChunkRef) else None)
        for key, meta, ref in _collect(base, staged, reader, prefix, refs=True)
    ]


def view_keys(
    base: Root, staged: StagedState, reader: SnapshotReader, prefix: str = ""
) -> list[str]:
    """The keys of :func:`view_entries`, without reading a ref of the base commit's chunks
    (a listing of a large array spends its time there)."""
    return [key for key, _, _ in _collect(base, staged, reader, prefix, refs=False)]


def view_children(
    base: Root, staged: StagedState, reader: SnapshotReader, prefix: str = ""
) -> dict[str, bool]:
    """The names directly under the directory ``prefix`` (zarr's ``list_dir``), sorted, each
    with whether it is a directory itself: the first part of every key :func:`view_keys`
    shows under it. Outside an array's chunk keys that takes node paths and plain keys only,
    never a chunk listing: every chunk key lies under its array's path, which the array's
    ``zarr.json`` already names."""
    nodes = _Nodes(base, staged, reader)
    full = f"{prefix.rstrip('/')}/" if prefix.rstrip("/") else ""
    keys: list[str] | None = None
    for path in nodes.paths:
        node_prefix = f"{path}/" if path else ""
        if full.startswith(node_prefix) and (nm := nodes.node_meta(path)) and nm.is_array:
            # the directory is (inside) an array's: its chunk keys are among the names
            keys = view_keys(base, staged, reader, full)
            break
    if keys is None:
        keys = [f"{p}/zarr.json" if p else "zarr.json" for p in nodes.paths]
        raw: dict[str, ChunkRef | None] = {k: r for k, r in base.raw.items() if k.startswith(full)}
        raw.update((k, r) for k, r in staged.raw.items() if k.startswith(full))
        # a plain key an array claims lies under the array's path: its name is there already
        keys.extend(k for k, r in raw.items() if r is not None)
    out: dict[str, bool] = {}
    for key in keys:
        if key.startswith(full):
            name, sep, _ = key[len(full) :].partition("/")
            out[name] = out.get(name, False) or bool(sep)
    return dict(sorted(out.items()))


_HELD = object()  # a base chunk whose ref was not read
_Entry = tuple[str, bytes | None, object]  # key, metadata hash, ChunkRef or _HELD


def _collect(
    base: Root, staged: StagedState, reader: SnapshotReader, prefix: str, *, refs: bool
) -> list[_Entry]:
    nodes = _Nodes(base, staged, reader)
    out: list[_Entry] = []
    # plain keys; keys staged plain that an array now claims become its chunks
    claims: dict[str, dict[ChunkCoords, ChunkRef | None]] = {}
    raw: dict[str, ChunkRef | None] = {k: r for k, r in base.raw.items() if k.startswith(prefix)}
    raw.update((k, r) for k, r in staged.raw.items() if k.startswith(prefix))
    for key, ref in raw.items():
        owner = nodes.owner(key)
        if owner is None:
            if ref is not None:
                out.append((key, None, ref))
        elif key in staged.raw:
            claims.setdefault(owner[0], {})[owner[1]] = ref
    for path in nodes.paths:
        node_prefix = f"{path}/" if path else ""
        if not (node_prefix.startswith(prefix) or prefix.startswith(node_prefix)):
            continue
        if (node_prefix + "zarr.json").startswith(prefix):
            out.append((node_prefix + "zarr.json", nodes.meta[path], None))
        nm = nodes.node_meta(path)
        if nm is not None and nm.is_array:
            chunks = _chunks(base, staged, nodes, path, nm, refs)
            # staged chunks win over keys staged plain, which win over the base's
            sn = staged.nodes.get(path, StagedNode())
            for coords, ref in {**claims.get(path, {}), **sn.all_chunks()}.items():
                if ref is not None and len(coords) == nm.ndim and nm.in_grid(coords):
                    chunks[coords] = ref
                else:
                    chunks.pop(coords, None)
            out.extend(_chunk_entries(nodes, path, nm, chunks, prefix))
    out.sort(key=lambda e: e[0])
    return out


def _chunks(
    base: Root, staged: StagedState, nodes: _Nodes, path: str, nm: NodeMeta, refs: bool
) -> dict[ChunkCoords, object]:
    """The base commit's chunks of an array inside its grid now, with their refs if ``refs``:
    none if the session dropped the node or changed its number of dimensions."""
    node = None if staged.nodes.get(path, StagedNode()).dropped else base.nodes.get(path)
    reader = nodes.reader
    if node is None or node.manifest is None or reader.node_meta(node.meta).ndim != nm.ndim:
        return {}
    index = reader.index(node.manifest)
    shape = index.shard_shape
    grid = None if nm.grid_shape is None else np.array(nm.grid_shape, np.int64)
    out: dict[ChunkCoords, object] = {}
    for pos, h in index.shard_items(reader):
        shard = reader.shard(h)
        if len(shard) == 0:
            continue
        if not shape:  # a 0-d array has one chunk
            out[()] = shard.ref_at(0) if refs else _HELD
            continue
        # every chunk of the shard at once: its flat index (C order) to coordinates
        local = np.unravel_index(shard.flat, shape)
        coords = np.stack([x + p * s for x, p, s in zip(local, pos, shape, strict=True)], 1)
        rows = np.arange(len(shard))
        if grid is not None:  # a chunk outside a grid that shrank is not shown
            inside = (coords < grid).all(axis=1)
            coords, rows = coords[inside], rows[inside]
        if refs:
            out.update(
                (tuple(c), shard.ref_at(i))
                for c, i in zip(coords.tolist(), rows.tolist(), strict=True)
            )
        else:
            out.update(dict.fromkeys(map(tuple, coords.tolist()), _HELD))
    return out


def _chunk_entries(
    nodes: _Nodes, path: str, nm: NodeMeta, chunks: dict[ChunkCoords, object], prefix: str
) -> Iterator[_Entry]:
    """The keys of an array's chunks (each inside its grid) under ``prefix``."""
    node_prefix = f"{path}/" if path else ""
    # a node below this array can claim some of its keys (zarr never makes one, a store may)
    nested = nodes.has_nodes_under(path)
    for coords, ref in chunks.items():
        key = node_prefix + format_chunk_key(coords, nm.encoding)
        if key.startswith(prefix) and (not nested or nodes.owner(key) == (path, coords)):
            yield key, None, ref
