"""The chunks a commit changed, and how, held as arrays.

A commit that adds 10^6 references (an import by reference) records each chunk in its change
set (:class:`~zarrlake.model.changes.NodeChange`). As a frozenset of coordinate tuples and a
dict of kinds that took about 170 bytes per chunk, held until the commit was written.
:class:`ChunkArray` and :class:`KindArray` hold the same as an ``(n, ndim)`` int64 array and
a uint8 array (17 bytes per chunk of a 2-dimensional array), behave as the frozenset and the
mapping they stand for, and build those only when asked for one chunk (``in``, ``[]``):
counting, iterating and encoding them never does."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from zarrlake.types import ChunkCoords

__all__ = ["ChunkArray", "KindArray", "kind_array"]

_BLOCK = 4_096  # rows turned into tuples at a time while iterating


class ChunkArray(AbstractSet[ChunkCoords]):
    """A frozen set of chunk coordinates: the rows of ``coords`` (``(n, ndim)`` int64, no row
    twice), in that order when iterated."""

    __slots__ = ("_coords", "_set")

    def __init__(self, coords: np.ndarray) -> None:
        self._coords = coords
        self._set: frozenset[ChunkCoords] | None = None

    @property
    def coords(self) -> np.ndarray:
        return self._coords

    def __len__(self) -> int:
        return len(self._coords)

    def __iter__(self) -> Iterator[ChunkCoords]:
        for start in range(0, len(self._coords), _BLOCK):
            yield from map(tuple, self._coords[start : start + _BLOCK].tolist())

    def __contains__(self, item: object) -> bool:
        return item in self.as_frozenset()

    def as_frozenset(self) -> frozenset[ChunkCoords]:
        if self._set is None:
            self._set = frozenset(self)
        return self._set

    def __hash__(self) -> int:  # equal to the hash of the equal frozenset
        return hash(self.as_frozenset())

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> frozenset[Any]:
        return frozenset(it)  # what ``&``, ``|`` and ``-`` of these sets return

    def __repr__(self) -> str:
        return f"ChunkArray({len(self)} chunks)"


class KindArray(Mapping[ChunkCoords, int]):
    """Chunk coordinates -> how the chunk changed: ``kinds[i]`` for the ``i``-th chunk of
    ``chunks``."""

    __slots__ = ("_chunks", "_dict", "_kinds")

    def __init__(self, chunks: ChunkArray, kinds: np.ndarray) -> None:
        if len(chunks) != len(kinds):
            raise ValueError(f"{len(kinds)} kinds for {len(chunks)} chunks")
        self._chunks = chunks
        self._kinds = kinds
        self._dict: dict[ChunkCoords, int] | None = None

    @property
    def chunks(self) -> ChunkArray:
        return self._chunks

    @property
    def kinds(self) -> np.ndarray:
        return self._kinds

    def __len__(self) -> int:
        return len(self._kinds)

    def __iter__(self) -> Iterator[ChunkCoords]:
        return iter(self._chunks)

    def __getitem__(self, key: ChunkCoords) -> int:
        if self._dict is None:
            self._dict = dict(zip(self._chunks, self._kinds.tolist(), strict=True))
        return self._dict[key]

    def __repr__(self) -> str:
        return f"KindArray({len(self)} chunks)"


def kind_array(
    ndim: int, known: Mapping[ChunkCoords, int], parts: Iterable[tuple[np.ndarray, int]]
) -> KindArray:
    """The kinds of ``known``, then of every row of each ``(coords, kind)`` of ``parts`` (no
    chunk in two of them), as one :class:`KindArray` of ``ndim``-dimensional chunks."""
    coords = [np.array(list(known), np.int64).reshape(len(known), ndim)]
    kinds = [np.fromiter(known.values(), np.uint8, len(known))]
    for block, kind in parts:
        coords.append(np.asarray(block, np.int64).reshape(len(block), ndim))
        kinds.append(np.full(len(block), kind, np.uint8))
    return KindArray(ChunkArray(np.concatenate(coords)), np.concatenate(kinds))
