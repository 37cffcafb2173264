"""A commit or merge as checks see it before it lands: the resulting snapshot, the one it
replaces, and what changed between them. Checks read only the chunks that changed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from zarrlake.core.repo_core import RepoCore
from zarrlake.model import ChangeSet, Root
from zarrlake.model.changes import NodeChange, SnapshotReader
from zarrlake.model.merge import chunk_ref
from zarrlake.model.metadata import format_chunk_key
from zarrlake.types import ChunkCoords

__all__ = ["Proposal"]


class Proposal:
    """The would-be commit a check judges.

    Attributes: ``branch``, ``event`` (``"commit"`` or ``"merge"``), ``params`` (the check's
    parameters, for custom checks), ``changes`` (array or group path -> what changed:
    ``created``, ``deleted``, ``structure``, ``attrs``, ``chunks``).
    """

    def __init__(
        self,
        core: RepoCore,
        *,
        branch: str,
        event: str,
        before: Root,
        after: Root,
        reader: SnapshotReader,
        changes: ChangeSet,
    ) -> None:
        self.branch = branch
        self.event = event
        self.params: dict[str, Any] = {}
        self.changes: dict[str, NodeChange] = dict(changes.nodes)
        self._core = core
        self._before, self._after, self._reader = before, after, reader

    def with_params(self, params: dict[str, Any]) -> Proposal:
        """This proposal as one check sees it (its parameters set)."""
        twin = Proposal.__new__(Proposal)
        twin.__dict__.update(self.__dict__)
        twin.params = dict(params)
        return twin

    def arrays(self) -> list[str]:
        """Paths of the arrays this change touches (created, changed or deleted)."""
        return sorted(p for p, c in self.changes.items() if c.node_type == "array" or c.deleted)

    def metadata(self, path: str, *, before: bool = False) -> dict[str, Any] | None:
        """A node's ``zarr.json`` document after (or ``before``) the change; ``None`` if it
        does not exist there."""
        node = (self._before if before else self._after).nodes.get(path)
        if node is None:
            return None
        doc: dict[str, Any] = json.loads(self._reader.meta_bytes(node.meta))
        return doc

    def attributes(self, path: str, *, before: bool = False) -> dict[str, Any]:
        doc = self.metadata(path, before=before)
        return {} if doc is None else dict(doc.get("attributes") or {})

    def changed_chunks(self, path: str) -> Iterator[tuple[ChunkCoords, np.ndarray]]:
        """(chunk coordinates, values) of each chunk of array ``path`` the change wrote, read
        from the proposed snapshot (chunks it removed are skipped: they read as the fill
        value)."""
        change = self.changes.get(path)
        doc = self.metadata(path)
        if change is None or doc is None or doc.get("node_type") != "array" or not change.chunks:
            return
        node = self._after.nodes[path]
        nm = self._reader.node_meta(node.meta)
        refs = []
        for coords in sorted(change.chunks):
            ref = chunk_ref(self._after, path, coords, self._reader)
            if ref is not None:
                refs.append((coords, ref))
        if not refs:
            return
        import zarr
        from zarr.core.buffer import default_buffer_prototype
        from zarr.storage import MemoryStore

        proto = default_buffer_prototype()
        items = {"zarr.json": proto.buffer.from_bytes(json.dumps(doc).encode())}
        for coords, ref in refs:
            data = ref.inline if ref.inline is not None else self._core.read_chunk(ref)
            items[format_chunk_key(coords, nm.encoding)] = proto.buffer.from_bytes(data)
        arr = zarr.open_array(MemoryStore(items), mode="r")
        shape = _chunk_shape(doc, arr.shape)
        for coords, _ in refs:
            region = tuple(
                slice(c * s, min((c + 1) * s, n))
                for c, s, n in zip(coords, shape, arr.shape, strict=True)
            )
            yield coords, np.asarray(arr[region])


def _chunk_shape(doc: dict[str, Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    grid = doc.get("chunk_grid") or {}
    found = (grid.get("configuration") or {}).get("chunk_shape")
    return tuple(int(c) for c in found) if found else shape
