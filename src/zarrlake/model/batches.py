"""Virtual references staged a shard at a time.

A session that stages many references to one array (a VirtualiZarr dataset, an import by
reference) stages them as *batches*: one manifest shard's worth of virtual entries, at the
shard position the commit will give them, built from columns without a Python object per
reference. A commit that finds a batch at a position where the base has no shard and no
chunk of the session falls takes the batch as the new shard unchanged; everywhere else a
batch is expanded into chunks and goes the usual way.

Batches are an encoding of staged chunks, not a meaning of their own: a chunk staged as such
wins over a batch's entry at the same coordinates (the catalog removes a chunk's row when a
batch covering it is staged after it), and a later batch at the same position overlays an
earlier one (:func:`overlay`).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import numpy as np

from zarrlake.errors import CatalogError
from zarrlake.model.manifest import VIRTUAL, ChunkRef, Shard, content_hash
from zarrlake.model.records import StagedEntry
from zarrlake.model.virtual import VirtualSource
from zarrlake.types import ChunkCoords

__all__ = [
    "batch_coord_array",
    "batch_coords",
    "batch_entry",
    "batch_shard",
    "batch_size",
    "build_batch",
    "entry_chunks",
    "entry_coords",
    "expand_batch",
    "overlay",
    "positions",
    "shape_text",
    "stage_batch",
    "text_shape",
]

_ENTRY = np.dtype([("at", "<u8"), ("src", "<u4")])  # a virtual entry's part of the blob


def _blob(e: StagedEntry) -> bytes:
    """The encoded shard a staged batch entry holds."""
    if e.kind != "vrefs" or e.ref is None or e.ref.inline is None:
        raise CatalogError(f"a staged batch of {e.path!r} at {e.coords} is corrupt")
    return e.ref.inline


def batch_shard(e: StagedEntry) -> Shard:
    """The shard a staged batch entry holds."""
    return Shard.decode(_blob(e))


def batch_size(e: StagedEntry) -> int:
    """How many references a staged batch entry holds (without decoding its shard)."""
    return Shard.count(_blob(e))


def batch_entry(path: str, pos: ChunkCoords, shape: str, shard: Shard) -> StagedEntry:
    """The staged entry of the batch ``shard`` at ``pos`` (shard shape ``shape``, as text)."""
    blob = shard.encode()
    return StagedEntry(path, "vrefs", pos, shape, ChunkRef(content_hash(blob), len(blob), blob))


def shape_text(shape: Sequence[int]) -> str:
    return ",".join(map(str, shape))


def text_shape(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",")) if text else ()
    except ValueError as exc:
        raise CatalogError(f"a staged batch's shard shape is corrupt: {text!r}") from exc


def positions(coords: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(shard position of each chunk, as rows of ``coords // shape``; flat index of each
    chunk inside its shard, in C order) of ``coords`` (int64, one row per chunk)."""
    shp = np.asarray(shape, np.int64)
    pos = coords // shp
    local = coords - pos * shp
    flat = np.ravel_multi_index(tuple(local.T), shape) if len(shape) else np.zeros(len(coords))
    return pos, np.asarray(flat, np.int64)


def build_batch(
    flat: np.ndarray,
    hashes: np.ndarray,
    lengths: np.ndarray,
    offsets: np.ndarray,
    source_ids: np.ndarray,
    texts: Sequence[str],
    sources: Sequence[VirtualSource] | None = None,
) -> Shard:
    """A shard of virtual entries from columns (``flat`` unique): entry ``i`` is
    ``lengths[i]`` bytes at ``offsets[i]`` of the source whose record is
    ``texts[source_ids[i]]`` (``sources[source_ids[i]]``, if given), named by ``hashes[i]``
    (:func:`~zarrlake.model.virtual.virtual_hash`). Its sources table holds the sources its
    entries name, in order of first use."""
    order = np.argsort(flat, kind="stable")
    used, first = np.unique(source_ids[order], return_index=True)
    by_use = used[np.argsort(first, kind="stable")]
    renumber = np.empty(int(source_ids.max()) + 1 if len(source_ids) else 0, np.uint32)
    renumber[by_use] = np.arange(len(by_use), dtype=np.uint32)
    n = len(flat)
    parts = np.empty(n, _ENTRY)
    parts["at"] = offsets[order]
    parts["src"] = renumber[source_ids[order]]
    return Shard(
        np.ascontiguousarray(flat[order], np.int64),
        np.ascontiguousarray(hashes[order], np.uint8),
        np.ascontiguousarray(lengths[order], np.uint64),
        np.full(n, VIRTUAL, np.uint8),
        np.arange(n, dtype=np.uint64) * np.uint64(_ENTRY.itemsize),
        parts.tobytes(),
        None,
        () if sources is None else tuple(sources[i] for i in by_use.tolist()),
        tuple(texts[i] for i in by_use.tolist()),
    )


def _columns(shard: Shard) -> np.ndarray:
    """The (offset in source, source number) of each entry of an all-virtual shard."""
    if len(shard) and not (shard.kinds == VIRTUAL).all():
        raise CatalogError("a staged batch holds entries that are not virtual references")
    at = shard.offsets.astype(np.int64)
    if len(at) and int(at.max()) + _ENTRY.itemsize > len(shard.blob):
        raise CatalogError("a staged batch is corrupt: an entry points past its blob")
    raw = np.frombuffer(shard.blob, np.uint8)
    index = at[:, None] + np.arange(_ENTRY.itemsize, dtype=np.int64)
    return raw[index].reshape(-1).view(_ENTRY) if len(at) else np.empty(0, _ENTRY)


def overlay(older: Shard, newer: Shard) -> Shard:
    """``older`` with ``newer``'s entries written over it (both batches: virtual entries
    only), as one batch. Sources are told apart by their records, never decoded."""
    old_cols, new_cols = _columns(older), _columns(newer)
    table = {t: i for i, t in enumerate(older.source_texts)}
    for t in newer.source_texts:
        table.setdefault(t, len(table))
    remap = np.array([table[t] for t in newer.source_texts], np.uint32)
    keep = ~np.isin(older.flat, newer.flat)
    new_src = remap[new_cols["src"]] if len(new_cols) else np.empty(0, np.uint32)
    return build_batch(
        np.concatenate([older.flat[keep], newer.flat]),
        np.concatenate([older.hashes[keep], newer.hashes]),
        np.concatenate([older.lengths[keep], newer.lengths]),
        np.concatenate([old_cols["at"][keep], new_cols["at"]]),
        np.concatenate([old_cols["src"][keep], new_src]).astype(np.int64),
        tuple(table),
    )


def batch_coord_array(pos: ChunkCoords, flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The chunk coordinates of the entries at ``flat`` (flat indices in the shard) of the
    batch at ``pos``, one row each (int64)."""
    if not shape:
        return np.zeros((len(flat), 0), np.int64)
    local = np.unravel_index(flat, shape)
    return np.stack([x + p * s for x, p, s in zip(local, pos, shape, strict=True)], 1)


def batch_coords(pos: ChunkCoords, shard: Shard, shape: tuple[int, ...]) -> list[ChunkCoords]:
    """The chunk coordinates of every entry of the batch at ``pos``."""
    if not shape:
        return [()] * len(shard)
    return list(map(tuple, batch_coord_array(pos, shard.flat, shape).tolist()))


def expand_batch(
    pos: ChunkCoords, shard: Shard, shape: tuple[int, ...]
) -> dict[ChunkCoords, ChunkRef | None]:
    """The batch at ``pos`` as staged chunks (coords -> ref)."""
    coords = batch_coords(pos, shard, shape)
    return {c: shard.ref_at(i) for i, c in enumerate(coords)}


def entry_coords(e: StagedEntry) -> list[ChunkCoords]:
    """The chunk coordinates of every reference of the staged batch entry ``e``."""
    return batch_coords(e.coords, batch_shard(e), text_shape(e.key))


def entry_chunks(e: StagedEntry) -> dict[ChunkCoords, ChunkRef | None]:
    """The staged batch entry ``e`` as staged chunks (coords -> ref)."""
    return expand_batch(e.coords, batch_shard(e), text_shape(e.key))


def stage_batch(staged: MutableMapping[Any, StagedEntry], e: StagedEntry) -> None:
    """Stage the batch ``e`` into ``staged`` (entries by :attr:`StagedEntry.slot`) as the
    catalog stages it (:mod:`zarrlake.catalog.batches`)."""
    shard, shape = batch_shard(e), text_shape(e.key)
    known = staged.setdefault((e.path, "vshape", (), ""), StagedEntry(e.path, "vshape", (), e.key))
    if known.key != e.key:
        for c, r in expand_batch(e.coords, shard, shape).items():
            staged[(e.path, "chunk", c, "")] = StagedEntry(e.path, "chunk", c, "", r)
        return
    for c in batch_coords(e.coords, shard, shape):
        staged.pop((e.path, "chunk", c, ""), None)
    old = staged.get(e.slot)
    if old is not None:
        e = batch_entry(e.path, e.coords, e.key, overlay(batch_shard(old), shard))
    staged[e.slot] = e
