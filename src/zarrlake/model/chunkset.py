"""The chunks a commit changed, and how, held as arrays.

A commit that adds 10^6 references (an import by reference) records each chunk in its change
set (:class:`~zarrlake.model.changes.NodeChange`). As a frozenset of coordinate tuples and a
dict of kinds that took about 170 bytes per chunk, held until the commit was written.
:class:`ChunkArray` and :class:`KindArray` hold the same as blocks of rows: ``(n, ndim)``
int64 arrays, or :class:`LazyRows` that make theirs when asked (the chunks of a new shard,
from the chunk positions the session already holds for it), each block with one kind or a
uint8 array of kinds. They behave as the frozenset and the mapping they stand for, and
build those only when asked for one chunk (``in``, ``[]``): counting, iterating and encoding
them never does, and encoding goes a block at a time (:meth:`KindArray.blocks`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarrlake.types import ChunkCoords

__all__ = ["ChunkArray", "KindArray", "LazyRows", "kind_array"]

_BLOCK = 4_096  # rows turned into tuples at a time while iterating


@dataclass(frozen=True, slots=True)
class LazyRows:
    """``count`` rows of chunk coordinates (``(count, ndim)`` int64), made by ``make`` each
    time they are asked for, never kept."""

    count: int
    make: Callable[[], np.ndarray]

    def __len__(self) -> int:
        return self.count


Rows = np.ndarray | LazyRows


def _rows(block: Rows) -> np.ndarray:
    return block.make() if isinstance(block, LazyRows) else block


class ChunkArray(AbstractSet[ChunkCoords]):
    """A frozen set of chunk coordinates: the rows of ``coords`` (``(n, ndim)`` int64, no row
    twice), or of several blocks of rows, in that order when iterated."""

    __slots__ = ("_blocks", "_len", "_ndim", "_set")

    def __init__(self, *blocks: Rows, ndim: int | None = None) -> None:
        self._blocks = blocks
        if ndim is None:
            first = blocks[0] if blocks else None
            ndim = first.shape[1] if isinstance(first, np.ndarray) and first.ndim == 2 else 0
        self._ndim = ndim
        self._len = sum(map(len, blocks))
        self._set: frozenset[ChunkCoords] | None = None

    @property
    def coords(self) -> np.ndarray:
        """Every row, as one array (made when asked for, unless there is one block)."""
        if len(self._blocks) == 1 and not isinstance(self._blocks[0], LazyRows):
            return self._blocks[0]
        if not self._blocks:
            return np.empty((0, self._ndim), np.int64)
        return np.concatenate([_rows(b) for b in self._blocks])

    def block_lengths(self) -> list[int]:
        return [len(b) for b in self._blocks]

    @property
    def blocks_count(self) -> int:
        return len(self._blocks)

    def blocks(self) -> Iterator[np.ndarray]:
        """The rows, a block at a time."""
        for b in self._blocks:
            yield _rows(b)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[ChunkCoords]:
        for rows in self.blocks():
            for start in range(0, len(rows), _BLOCK):
                yield from map(tuple, rows[start : start + _BLOCK].tolist())

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
    ``chunks``. ``kinds`` is one array for every chunk, or a list with an entry per block of
    ``chunks``: the block's kinds, or one kind for all of its rows."""

    __slots__ = ("_chunks", "_dict", "_kinds")

    def __init__(self, chunks: ChunkArray, kinds: np.ndarray | list[np.ndarray | int]) -> None:
        lengths = chunks.block_lengths()
        if isinstance(kinds, np.ndarray):
            if len(kinds) != len(chunks):
                raise ValueError(f"{len(kinds)} kinds for {len(chunks)} chunks")
            # one array over every block: split along them
            whole = np.asarray(kinds, np.uint8)
            parts: list[np.ndarray | int] = (
                list(np.split(whole, np.cumsum(lengths)[:-1])) if lengths else []
            )
        else:
            parts = list(kinds)
            bad = len(parts) != len(lengths) or any(
                isinstance(k, np.ndarray) and len(k) != n
                for k, n in zip(parts, lengths, strict=False)
            )
            if bad:
                raise ValueError(f"kinds for {len(parts)} blocks do not fit {lengths} chunks")
        self._chunks = chunks
        self._kinds = parts
        self._dict: dict[ChunkCoords, int] | None = None

    @property
    def chunks(self) -> ChunkArray:
        return self._chunks

    @property
    def kinds(self) -> np.ndarray:
        """Every chunk's kind, in the order of ``chunks``, as one array."""
        blocks = list(self._kind_blocks())
        if len(blocks) == 1:
            return blocks[0]
        return np.concatenate(blocks) if blocks else np.empty(0, np.uint8)

    def _kind_blocks(self) -> Iterator[np.ndarray]:
        for k, n in zip(self._kinds, self._chunks.block_lengths(), strict=True):
            yield k if isinstance(k, np.ndarray) else np.full(n, k, np.uint8)

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rows, their kinds), a block at a time."""
        yield from zip(self._chunks.blocks(), self._kind_blocks(), strict=True)

    def __len__(self) -> int:
        return len(self._chunks)

    def __iter__(self) -> Iterator[ChunkCoords]:
        return iter(self._chunks)

    def __getitem__(self, key: ChunkCoords) -> int:
        if self._dict is None:
            self._dict = dict(zip(self._chunks, self.kinds.tolist(), strict=True))
        return self._dict[key]

    def __repr__(self) -> str:
        return f"KindArray({len(self)} chunks)"


def kind_array(
    ndim: int, known: Mapping[ChunkCoords, int], parts: Iterable[tuple[Rows, int]]
) -> KindArray:
    """The kinds of ``known``, then of every row of each ``(rows, kind)`` of ``parts`` (no
    chunk in two of them), as one :class:`KindArray` of ``ndim``-dimensional chunks; rows
    given as :class:`LazyRows` stay so."""
    blocks: list[Rows] = []
    kinds: list[np.ndarray | int] = []
    if known:
        blocks.append(np.array(list(known), np.int64).reshape(len(known), ndim))
        kinds.append(np.fromiter(known.values(), np.uint8, len(known)))
    for rows, kind in parts:
        if len(rows):
            blocks.append(rows if isinstance(rows, LazyRows) else np.asarray(rows, np.int64))
            kinds.append(kind)
    return KindArray(ChunkArray(*blocks, ndim=ndim), kinds)
