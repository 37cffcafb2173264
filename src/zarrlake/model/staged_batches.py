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

The flat indices of a left batch are kept as runs of consecutive indices where that is
smaller (16 bytes a run), else as int32 (4 bytes a chunk): an import fills most of its shards
whole, each one run, so what its commit holds for them does not grow with the shards' chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np

from zarrlake.model.batches import expand_batch
from zarrlake.model.index import ManifestIndex, NodeLoader
from zarrlake.model.manifest import ChunkRef, Shard, split_coords
from zarrlake.types import ChunkCoords

__all__ = ["StagedBatches", "take_batches"]

# reads the batch a session staged at a shard position from the catalog
BatchLoader = Callable[[ChunkCoords], Shard]


@dataclass(frozen=True, slots=True)
class _Runs:
    """Sorted flat indices as runs of consecutive ones, ``starts[i]`` up to ``ends[i]``."""

    starts: np.ndarray
    ends: np.ndarray  # each run's end, exclusive
    count: int

    def array(self) -> np.ndarray:
        lengths = self.ends - self.starts
        # index ``i`` of run ``k`` is ``starts[k] + i - (the indices of the runs before k)``
        return np.repeat(self.starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
            self.count
        )

    def __contains__(self, flat: int) -> bool:
        k = int(np.searchsorted(self.starts, flat, side="right")) - 1
        return k >= 0 and flat < int(self.ends[k])


def _compact(flat: np.ndarray) -> np.ndarray | _Runs:
    """``flat`` (sorted flat indices) in whichever form is smaller: runs or int32 (int64 past
    its range); a copy either way (``flat`` may be a view of the shard's bytes)."""
    n = len(flat)
    if n:
        breaks = np.flatnonzero(np.diff(flat) != 1) + 1
        if (len(breaks) + 1) * 16 < n * 4:
            starts = flat[np.concatenate(([0], breaks))].astype(np.int64)
            ends = flat[np.concatenate((breaks - 1, [n - 1]))].astype(np.int64) + 1
            return _Runs(starts, ends, n)
    small = not n or int(flat[-1]) < 2**31
    return flat.astype(np.int32) if small else flat.copy()


class StagedBatches(MutableMapping[ChunkCoords, Shard]):
    """Shard position -> the batch staged there: a mapping of :class:`Shard` whatever is held,
    so that every consumer reads it as one; :meth:`staged_hash` and :meth:`flat` answer for a
    batch left in the catalog without reading it."""

    __slots__ = ("_held", "_left", "_load")

    def __init__(self, load: BatchLoader | None = None) -> None:
        self._held: dict[ChunkCoords, Shard] = {}
        self._left: dict[ChunkCoords, tuple[bytes, np.ndarray | _Runs]] = {}
        self._load = load

    def leave(self, pos: ChunkCoords, shard_hash: bytes, flat: np.ndarray) -> None:
        """Record the batch at ``pos`` as staged in the catalog under ``shard_hash`` (the hash
        of its encoded shard), holding the chunks at ``flat``; it is read back when needed."""
        if self._load is None:
            raise ValueError("a batch can be left in the catalog only with a loader")
        self._held.pop(pos, None)
        self._left[pos] = (shard_hash, _compact(flat))

    def staged_hash(self, pos: ChunkCoords) -> bytes | None:
        """The hash of the batch at ``pos`` if it was left in the catalog, else ``None``."""
        found = self._left.get(pos)
        return None if found is None else found[0]

    def flat(self, pos: ChunkCoords) -> np.ndarray:
        """The flat indices (in the shard) of the chunks the batch at ``pos`` holds, sorted
        (made when asked for, for a batch left in the catalog)."""
        found = self._left.get(pos)
        if found is None:
            return self._held[pos].flat
        at = found[1]
        return at.array() if isinstance(at, _Runs) else at

    def count(self, pos: ChunkCoords) -> int:
        """How many chunks the batch at ``pos`` holds."""
        found = self._left.get(pos)
        if found is None:
            return len(self._held[pos].flat)
        at = found[1]
        return at.count if isinstance(at, _Runs) else len(at)

    def holds(self, pos: ChunkCoords, flat: int) -> bool:
        """Whether the batch at ``pos`` (if any) holds the chunk at ``flat`` in its shard."""
        found = self._left.get(pos)
        if found is not None and isinstance(found[1], _Runs):
            return flat in found[1]
        if pos not in self:
            return False
        indices = self.flat(pos)
        i = int(np.searchsorted(indices, flat))
        return i < len(indices) and int(indices[i]) == flat

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
        elif batches.count(pos):
            direct.append(pos)
    return ({**extra, **updates} if extra else updates), direct
