"""How a change set writes the chunks of one node: their coordinates in lexicographic order as
little-endian int64 rows, and their kinds (uint8) in the same order, each zlib-compressed and
in base64 (:meth:`~zarrlake.model.changes.ChangeSet.encode`).

Chunks that come in order already (an import adds them shard after shard, and shards span the
trailing dimensions) are compressed a block at a time as they come: encoding the change set of
10^6 new references then holds one shard's rows at a time, not every chunk's. Others are
gathered and sorted first. Either way the bytes are the same (zlib's output does not depend on
how its input is fed)."""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from itertools import chain

import numpy as np

from zarrlake.model.chunkset import KindArray
from zarrlake.types import ChunkCoords

__all__ = ["pack", "packed_chunks", "unpack"]

Packed = tuple[int, str | None, str | None]


def pack(arr: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(np.ascontiguousarray(arr), 1)).decode()  # no copy


def unpack(b64: str) -> bytes:
    return zlib.decompress(base64.b64decode(b64))


def packed_chunks(
    chunks: AbstractSet[ChunkCoords], kinds: Mapping[ChunkCoords, int] | None
) -> Packed:
    """(the number of dimensions, the packed coordinates of ``chunks`` in order or ``None``
    when there are none, their packed ``kinds`` in that order or ``None`` without kinds)."""
    if isinstance(kinds, KindArray) and kinds.chunks is chunks and kinds.chunks.blocks_count > 1:
        streamed = _streamed(kinds)
        if streamed is not None:
            return streamed
    arr, sorted_kinds = _sorted(chunks, kinds)
    ndim = arr.shape[1] if arr.ndim == 2 else 0
    coords = pack(arr) if len(arr) else None
    return ndim, coords, None if sorted_kinds is None else pack(sorted_kinds)


def _streamed(kinds: KindArray) -> Packed | None:
    """:func:`packed_chunks` of ``kinds`` a block at a time, or ``None`` if its blocks are
    not in order."""
    zc, zk = zlib.compressobj(1), zlib.compressobj(1)
    out_c: list[bytes] = []
    out_k: list[bytes] = []
    ndim, last = 0, None
    for rows, block_kinds in kinds.blocks():
        if not len(rows):
            continue
        ndim = rows.shape[1] if rows.ndim == 2 else 0
        if ndim and (not _in_order(rows) or (last is not None and last >= rows[0].tolist())):
            return None
        last = rows[-1].tolist() if ndim else None
        out_c.append(zc.compress(np.ascontiguousarray(rows.astype("<i8", copy=False))))
        out_k.append(zk.compress(np.ascontiguousarray(block_kinds)))
    coords = base64.b64encode(b"".join([*out_c, zc.flush()])).decode()
    return ndim, coords, base64.b64encode(b"".join([*out_k, zk.flush()])).decode()


def _sorted(
    chunks: AbstractSet[ChunkCoords], kinds: Mapping[ChunkCoords, int] | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Every chunk's coordinates, one row each, in order, and their kinds in that order."""
    k: np.ndarray | None
    if isinstance(kinds, KindArray) and kinds.chunks is chunks:
        arr, k = kinds.chunks.coords.astype("<i8", copy=False), kinds.kinds
    else:
        arr, k = _rows(chunks, kinds)
    if arr.ndim != 2 or not arr.shape[1] or _in_order(arr):
        return arr, k
    order = np.lexsort(arr.T[::-1])
    return arr[order], None if k is None else k[order]


def _in_order(rows: np.ndarray, block: int = 1 << 16) -> bool:
    """Whether ``rows`` are in lexicographic order, checked a block at a time (each block
    overlapping the last row of the one before), so that no array as long as ``rows`` is
    made to tell."""
    for start in range(0, len(rows), block):
        part = rows[max(start - 1, 0) : start + block]
        if not np.array_equal(np.lexsort(part.T[::-1]), np.arange(len(part))):
            return False
    return True


def _rows(
    chunks: AbstractSet[ChunkCoords], kinds: Mapping[ChunkCoords, int] | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """The coordinates of ``chunks``, one row each, and their kinds (or ``None``), unsorted."""
    out_kinds = None
    if kinds is not None and kinds.keys() == chunks:
        keys = list(kinds)
        out_kinds = np.fromiter(kinds.values(), np.uint8, len(keys))
    else:
        keys = list(chunks)
        if kinds is not None:
            out_kinds = np.fromiter(map(kinds.__getitem__, keys), np.uint8, len(keys))
    if not keys:
        return np.empty(0, "<i8"), out_kinds
    ndim = len(keys[0])
    flat = chain.from_iterable(keys)
    return np.fromiter(flat, "<i8", len(keys) * ndim).reshape(len(keys), ndim), out_kinds
