"""A node's staged batches (:mod:`zarrlake.model.batches`), held or left in the catalog.

A session that stages an import of 10^6 references stages a few hundred batches of a few
hundred kilobytes each. Reading them all into memory to commit them would make a commit's
memory grow with the import; yet a commit that takes a batch as a new shard as it is needs
only the batch's hash (the catalog copies the staged bytes into the new shard itself) and
which chunks it holds (for the change set). So a batch read from the catalog is *left* there:
:meth:`StagedBatches.leave` records its hash and the flat indices of its chunks, and the
shard is read again, one at a time and not kept, only where something needs its entries (a
merge with the base's shard, a listing, a check). A batch staged in this process and not
sent yet is *held* (:meth:`StagedBatches.__setitem__`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping

import numpy as np

from zarrlake.model.batches import expand_batch
from zarrlake.model.index import ManifestIndex, NodeLoader
from zarrlake.model.manifest import ChunkRef, Shard, split_coords
from zarrlake.types import ChunkCoords

__all__ = ["StagedBatches", "holds", "take_batches"]

# reads the batch a session staged at a shard position from the catalog
BatchLoader = Callable[[ChunkCoords], Shard]


class StagedBatches(MutableMapping[ChunkCoords, Shard]):
    """Shard position -> the batch staged there: a mapping of :class:`Shard` whatever is held,
    so that every consumer reads it as one; :meth:`staged_hash` and :meth:`flat` answer for a
    batch left in the catalog without reading it."""

    __slots__ = ("_held", "_left", "_load")

    def __init__(self, load: BatchLoader | None = None) -> None:
        self._held: dict[ChunkCoords, Shard] = {}
        self._left: dict[ChunkCoords, tuple[bytes, np.ndarray]] = {}
        self._load = load

    def leave(self, pos: ChunkCoords, shard_hash: bytes, flat: np.ndarray) -> None:
        """Record the batch at ``pos`` as staged in the catalog under ``shard_hash`` (the hash
        of its encoded shard), holding the chunks at ``flat``; it is read back when needed."""
        if self._load is None:
            raise ValueError("a batch can be left in the catalog only with a loader")
        self._held.pop(pos, None)
        # a copy (``flat`` may be a view of the shard's bytes), in 4 bytes a chunk where the
        # indices allow it (sorted: the last is the largest), as an import holds every batch's
        small = not len(flat) or int(flat[-1]) < 2**31
        self._left[pos] = (shard_hash, flat.astype(np.int32) if small else flat.copy())

    def staged_hash(self, pos: ChunkCoords) -> bytes | None:
        """The hash of the batch at ``pos`` if it was left in the catalog, else ``None``."""
        found = self._left.get(pos)
        return None if found is None else found[0]

    def flat(self, pos: ChunkCoords) -> np.ndarray:
        """The flat indices (in the shard) of the chunks the batch at ``pos`` holds."""
        found = self._left.get(pos)
        return found[1] if found is not None else self._held[pos].flat

    def __getitem__(self, pos: ChunkCoords) -> Shard:
        held = self._held.get(pos)
        if held is not None:
            return held
        if pos not in self._left or self._load is None:
            raise KeyError(pos)
        return self._load(pos)

    def __setitem__(self, pos: ChunkCoords, shard: Shard) -> None:
        self._left.pop(pos, None)
        self._held[pos] = shard

    def __delitem__(self, pos: ChunkCoords) -> None:
        if self._held.pop(pos, None) is None and self._left.pop(pos, None) is None:
            raise KeyError(pos)

    def __iter__(self) -> Iterator[ChunkCoords]:
        yield from self._held
        yield from self._left

    def __len__(self) -> int:
        return len(self._held) + len(self._left)

    def __contains__(self, pos: object) -> bool:
        return pos in self._held or pos in self._left

    def __repr__(self) -> str:
        return f"StagedBatches({len(self._held)} held, {len(self._left)} left in the catalog)"


def holds(batches: StagedBatches, pos: ChunkCoords, flat: int) -> bool:
    """Whether the batch at ``pos`` (if any) holds the chunk at ``flat`` in its shard."""
    if pos not in batches:
        return False
    indices = batches.flat(pos)
    i = int(np.searchsorted(indices, flat))
    return i < len(indices) and int(indices[i]) == flat


def take_batches(
    index: ManifestIndex,
    updates: Mapping[ChunkCoords, ChunkRef | None],
    batches: StagedBatches,
    batch_shape: tuple[int, ...],
    reader: NodeLoader,
) -> tuple[Mapping[ChunkCoords, ChunkRef | None], list[ChunkCoords]]:
    """(the staged chunks with the batches that must be merged expanded under them, the
    positions of the batches that become new shards as they are): a batch at a position where
    the base has a shard, or where a staged chunk falls, is merged the usual way; so is every
    batch taken with another shard shape than the array's. Only merged batches are read."""
    shape = index.shard_shape
    if batch_shape != shape:
        merged: dict[ChunkCoords, ChunkRef | None] = {}
        for pos in batches:
            merged.update(expand_batch(pos, batches[pos], batch_shape))
        return {**merged, **updates}, []
    taken = {split_coords(c, shape)[0] for c in updates}
    existing = index.shards_at(list(batches), reader)
    extra: dict[ChunkCoords, ChunkRef | None] = {}
    direct: list[ChunkCoords] = []
    for pos in batches:
        if pos in taken or pos in existing:
            extra.update(expand_batch(pos, batches[pos], shape))
        elif len(batches.flat(pos)):
            direct.append(pos)
    return ({**extra, **updates} if extra else updates), direct
