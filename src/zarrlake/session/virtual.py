"""Staging virtual chunk references: each source checked (allowed prefix, exists, readable)
and its version recorded once, each reference checked against its array's grid and its
source's size, before anything is staged.

References are checked and staged as columns (coordinates, source, offset, length) and
staged a shard at a time (:mod:`zarrlake.model.batches`): no Python object per reference but
its hash."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from zarrlake.catalog.interface import SessionStore
from zarrlake.errors import CatalogError, InvalidInputError, InvalidKeyError
from zarrlake.model import ChunkRef, NodeMeta, SnapshotReader
from zarrlake.model.batches import (
    batch_entry,
    batch_shard,
    build_batch,
    entry_chunks,
    positions,
    shape_text,
    text_shape,
)
from zarrlake.model.manifest import Shard, shard_shape_for, split_coords
from zarrlake.model.records import StagedEntry
from zarrlake.model.snapshot import NodeEntry
from zarrlake.model.virtual import VirtualSource, virtual_identities
from zarrlake.objects.sources import SourceReader
from zarrlake.types import ChunkCoords

__all__ = [
    "VirtualColumns",
    "VirtualRef",
    "batch_position",
    "batch_shape",
    "plan_chunks",
    "plan_virtual",
    "ref_columns",
    "staged_batch_ref",
    "staged_shape",
]

VirtualRef = tuple[Sequence[int], str, int, int]
"""(chunk coordinates, source URL, offset, length) of one virtual chunk."""

VirtualColumns = tuple[np.ndarray, Sequence[str], np.ndarray, np.ndarray]
"""The same as columns: coordinates (int, one row per reference), source URLs, offsets and
lengths (ints)."""


def batch_shape(base: NodeEntry | None, nm: NodeMeta, reader: SnapshotReader) -> tuple[int, ...]:
    """The shard shape the commit will give the array whose metadata is ``nm`` and whose
    base commit's node is ``base`` (``None``: new, or dropped by the session): the base
    manifest's, when it has one of the same number of dimensions."""
    if (
        base is not None
        and base.manifest is not None
        and reader.node_meta(base.meta).ndim == nm.ndim
    ):
        return reader.index(base.manifest).shard_shape
    return shard_shape_for(nm.grid_shape, nm.ndim)


def batch_position(coords: ChunkCoords, shape: tuple[int, ...] | None) -> ChunkCoords | None:
    """The shard position of the chunk at ``coords`` under ``shape`` (if known and fitting)."""
    if shape is None or len(shape) != len(coords):
        return None
    return split_coords(coords, shape)[0]


def staged_shape(sessions: SessionStore, session_id: str, path: str) -> tuple[int, ...] | None:
    """The shard shape of the batches session ``session_id`` staged for ``path``, if any."""
    found = sessions.get_staged(session_id, path, "vshape").get("vshape")
    return None if found is None else text_shape(found.key)


def staged_batch(sessions: SessionStore, session_id: str, path: str, pos: ChunkCoords) -> Shard:
    """The batch session ``session_id`` staged for ``path`` at shard position ``pos``."""
    entry = sessions.get_staged(session_id, path, "vrefs", key=shape_text(pos)).get("vrefs")
    if entry is None:
        raise CatalogError(
            f"the references session {session_id} staged for {path or '/'!r} at shard "
            f"position {pos} are gone (the session was committed or discarded meanwhile?)"
        )
    return batch_shard(entry)


def staged_batch_ref(
    sessions: SessionStore,
    session_id: str,
    path: str,
    coords: ChunkCoords,
    guess: tuple[int, ...] | None,
    found: Mapping[str, StagedEntry],
) -> ChunkRef | None:
    """The reference session ``session_id`` staged in a batch for the chunk at ``coords``
    of ``path``, from its staged lookup (``found``, by kind) that asked for the batch at
    the chunk's position under ``guess``; a second lookup reads the batch at another
    position, when the batches were staged with another shard shape than the guess."""
    marker = found.get("vshape")
    if marker is None:
        return None
    shape = text_shape(marker.key)
    if len(shape) != len(coords):
        return None
    pos, flat = split_coords(coords, shape)
    entry = found.get("vrefs")
    if shape != guess:
        entry = sessions.get_staged(session_id, path, "vrefs", key=shape_text(pos)).get("vrefs")
    if entry is None or entry.ref is None or entry.ref.inline is None:
        return None
    return Shard.decode(entry.ref.inline).get(flat)


def ref_columns(refs: Iterable[VirtualRef], ndim: int) -> VirtualColumns:
    """``refs`` as columns; a malformed reference is refused."""
    coords: list[tuple[int, ...]] = []
    urls: list[str] = []
    offsets: list[int] = []
    lengths: list[int] = []
    for item in refs:
        try:
            c, url, offset, length = item
            coords.append(tuple(map(int, c)))
            offsets.append(int(offset))
            lengths.append(int(length))
            urls.append(url)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"a virtual reference is (coords, url, offset, length); got {item!r}"
            ) from exc
    return (
        _coords_array(coords, ndim),
        urls,
        np.array(offsets, np.int64),
        np.array(lengths, np.int64),
    )


def _coords_array(coords: list[tuple[int, ...]], ndim: int) -> np.ndarray:
    if all(len(c) == ndim for c in coords):
        return np.array(coords, np.int64).reshape(len(coords), ndim)
    bad = next(c for c in coords if len(c) != ndim)
    raise InvalidKeyError(
        f"virtual reference to chunk {bad} has {len(bad)} coordinates, not {ndim}"
    )


def plan_virtual(
    sources: SourceReader,
    path: str,
    nm: NodeMeta | None,
    shape: tuple[int, ...],
    columns: VirtualColumns,
    seen: Mapping[str, VirtualSource] | None = None,
) -> list[StagedEntry]:
    """The staged rows (batches of shard shape ``shape``) of references to chunks of the
    array at ``path`` (``nm``: its metadata in the session's view); nothing is staged if
    any reference is refused. A chunk named twice takes its last reference. ``seen``: see
    :meth:`SourceReader.stat_many`."""
    if nm is None or not nm.is_array:
        raise InvalidInputError(
            f"there is no array at {path or '/'!r} to hold virtual references; create it "
            "(its zarr.json) first"
        )
    coords, urls, offsets, lengths = columns
    n = len(urls)
    try:
        coords = np.asarray(coords, np.int64).reshape(n, nm.ndim)
        offsets = np.asarray(offsets, np.int64).reshape(n)
        lengths = np.asarray(lengths, np.int64).reshape(n)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"virtual references to {path or '/'!r}: {n} URLs need {n} coordinates of "
            f"{nm.ndim} numbers, offsets and lengths ({exc})"
        ) from exc
    if n == 0:
        return []
    _check_grid(path, nm, coords)
    # each distinct URL is located (allowed prefix), looked up and hashed once
    ids: dict[str, int] = {}
    source_ids = np.fromiter((ids.setdefault(u, len(ids)) for u in urls), np.int64, n)
    found = sources.stat_many(ids, seen)
    srcs = [found[u] for u in ids]
    sizes = np.array([s.size for s in srcs], np.int64)
    bad = (offsets < 0) | (lengths < 0) | (offsets + lengths > sizes[source_ids])
    if bad.any():
        i = int(np.argmax(bad))
        sources.check_span(srcs[source_ids[i]], int(offsets[i]), int(lengths[i]))  # raises
    if nm.chunk_nbytes is not None and (lengths != nm.chunk_nbytes).any():
        i = int(np.argmax(lengths != nm.chunk_nbytes))
        raise InvalidInputError(
            f"virtual reference to chunk {tuple(coords[i].tolist())} of {path or '/'!r} is "
            f"{int(lengths[i])} bytes; the array stores uncompressed chunks of exactly "
            f"{nm.chunk_nbytes} bytes"
        )
    hashes = virtual_identities(sources.identity, srcs, source_ids, offsets, lengths)
    return list(_batches(path, shape, coords, hashes, lengths, offsets, source_ids, srcs))


def plan_chunks(
    sources: SourceReader, path: str, nm: NodeMeta, refs: Iterable[VirtualRef]
) -> dict[ChunkCoords, ChunkRef | None]:
    """:func:`plan_virtual` of ``refs``, as chunks (coords -> ref)."""
    shape = shard_shape_for(nm.grid_shape, nm.ndim)
    out: dict[ChunkCoords, ChunkRef | None] = {}
    for row in plan_virtual(sources, path, nm, shape, ref_columns(refs, nm.ndim)):
        out.update(entry_chunks(row))
    return out


def _check_grid(path: str, nm: NodeMeta, coords: np.ndarray) -> None:
    grid = nm.grid_shape
    if grid is not None:
        bad = (coords < 0).any(axis=1) | (coords >= np.array(grid, np.int64)).any(axis=1)
    else:
        bad = np.array([min(c, default=0) < 0 or not nm.in_grid(tuple(c)) for c in coords.tolist()])
    if bad.any():
        key = tuple(coords[int(np.argmax(bad))].tolist())
        raise InvalidKeyError(
            f"virtual reference to chunk {key} is outside the chunk grid {nm.grid_shape} "
            f"of array {path or '/'!r}"
        )


def _position_keys(pos: np.ndarray) -> np.ndarray:
    """Each chunk's shard position (a row of ``pos``) as one number, so that grouping the
    chunks by position sorts integers rather than rows."""
    if not pos.shape[1]:
        return np.zeros(len(pos), np.int64)
    try:
        keys = np.ravel_multi_index(tuple(pos.T), tuple((pos.max(axis=0) + 1).tolist()))
        return np.asarray(keys, np.int64)
    except ValueError:  # too many positions to number in an int64: rows, then
        return np.unique(pos, axis=0, return_inverse=True)[1].reshape(-1)


def _batches(
    path: str,
    shape: tuple[int, ...],
    coords: np.ndarray,
    hashes: np.ndarray,
    lengths: np.ndarray,
    offsets: np.ndarray,
    source_ids: np.ndarray,
    srcs: list[VirtualSource],
) -> Iterable[StagedEntry]:
    pos, flat = positions(coords, shape)
    keys, first, which = np.unique(_position_keys(pos), return_index=True, return_inverse=True)
    groups = pos[first]
    order = np.argsort(which, kind="stable")
    bounds = np.cumsum(np.bincount(which, minlength=len(keys)))
    text = shape_text(shape)
    texts = [s.encode() for s in srcs]  # each source's record written once
    start = 0
    for g, end in enumerate(bounds.tolist()):
        rows = order[start:end][::-1]  # last first: a chunk named twice keeps its last
        start = end
        _, first = np.unique(flat[rows], return_index=True)
        keep = rows[first]
        shard = build_batch(
            flat[keep], hashes[keep], lengths[keep], offsets[keep], source_ids[keep], texts, srcs
        )
        yield batch_entry(path, tuple(groups[g].tolist()), text, shard)
