"""The array-backed change set parts behave as the frozenset and mapping they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from zarrlake.model.changes import ADDED, CHANGED, ChangeSet, NodeChange
from zarrlake.model.chunkset import ChunkArray, KindArray, LazyRows, kind_array


def _chunks() -> ChunkArray:
    return ChunkArray(np.array([[3, 1], [0, 2], [7, 0]], np.int64))


def test_a_chunk_array_is_equal_to_the_frozenset_of_its_rows() -> None:
    chunks = _chunks()
    same = frozenset({(0, 2), (3, 1), (7, 0)})
    assert chunks == same
    assert same == chunks
    assert hash(chunks) == hash(same)
    assert chunks != frozenset({(0, 2), (3, 1)})
    assert list(chunks) == [(3, 1), (0, 2), (7, 0)]
    assert (0, 2) in chunks
    assert (2, 0) not in chunks
    assert len(chunks) == 3


def test_set_operations_on_a_chunk_array_give_frozensets() -> None:
    chunks = _chunks()
    assert chunks & {(7, 0), (9, 9)} == frozenset({(7, 0)})
    assert isinstance(chunks | {(9, 9)}, frozenset)
    assert chunks - {(3, 1)} == frozenset({(0, 2), (7, 0)})
    assert frozenset({(9, 9)}) | chunks == frozenset({(0, 2), (3, 1), (7, 0), (9, 9)})


def test_kinds_join_known_chunks_and_whole_blocks() -> None:
    kinds = kind_array(2, {(5, 5): CHANGED}, [(np.array([[1, 1], [2, 2]]), ADDED)])
    assert dict(kinds) == {(5, 5): CHANGED, (1, 1): ADDED, (2, 2): ADDED}
    assert kinds.chunks == frozenset({(5, 5), (1, 1), (2, 2)})
    with pytest.raises(ValueError, match="2 kinds for 3 chunks"):
        KindArray(_chunks(), np.zeros(2, np.uint8))


def test_a_change_set_of_arrays_encodes_as_the_one_of_tuples() -> None:
    kinds = kind_array(2, {(5, 5): CHANGED}, [(np.array([[1, 1], [0, 2]]), ADDED)])
    arrays = NodeChange(chunks=kinds.chunks, node_type="array", kinds=kinds)
    tuples = NodeChange(chunks=frozenset(kinds), node_type="array", kinds=dict(kinds))
    encoded = ChangeSet({"a": arrays}, exact=True).encode()
    assert encoded == ChangeSet({"a": tuples}, exact=True).encode()
    decoded = ChangeSet.decode(encoded).nodes["a"]
    assert decoded == tuples
    assert decoded.kinds == dict(kinds)


def test_a_zero_dimensional_chunk() -> None:
    kinds = kind_array(0, {}, [(np.zeros((1, 0), np.int64), ADDED)])
    assert list(kinds.chunks) == [()]
    assert dict(kinds) == {(): ADDED}
    node = NodeChange(chunks=kinds.chunks, node_type="array", kinds=kinds)
    assert ChangeSet.decode(ChangeSet({"s": node}).encode()).nodes["s"].chunks == {()}


@pytest.mark.parametrize("swap", [None, (5, 6), (65535, 65536), (69_998, 69_999)])
def test_rows_in_order_or_not_encode_alike(swap: tuple[int, int] | None) -> None:
    # An import adds its chunks shard after shard, in order: encoded without a sorted copy.
    # One pair out of order (within the first block, across the boundary between blocks of
    # the order check, at the end) must still be sorted, or the encoding would differ.
    rows = np.stack(np.divmod(np.arange(70_000, dtype=np.int64), 7), axis=1)
    kinds = np.arange(70_000, dtype=np.uint64).astype(np.uint8) % 4
    given_rows, given_kinds = rows.copy(), kinds.copy()
    if swap is not None:
        given_rows[list(swap)] = given_rows[list(swap[::-1])]
        given_kinds[list(swap)] = given_kinds[list(swap[::-1])]
    given = KindArray(ChunkArray(given_rows), given_kinds)
    ordered = KindArray(ChunkArray(rows), kinds)

    def encoded(k: KindArray) -> bytes:
        return ChangeSet({"a": NodeChange(chunks=k.chunks, kinds=k)}, exact=True).encode()

    assert encoded(given) == encoded(ordered)
    decoded = ChangeSet.decode(encoded(given)).nodes["a"].kinds
    assert decoded is not None
    assert decoded[(9999, 5)] == kinds[9999 * 7 + 5]


def _lazy(rows: np.ndarray, made: list[int]) -> LazyRows:
    def make() -> np.ndarray:
        made.append(len(rows))
        return rows

    return LazyRows(len(rows), make)


def test_blocks_made_on_demand_behave_as_one_array() -> None:
    made: list[int] = []
    first, second = np.array([[0, 1], [0, 3]]), np.array([[2, 0], [2, 1], [2, 2]])
    parts = [(_lazy(first, made), ADDED), (_lazy(second, made), 7)]
    kinds = kind_array(2, {(1, 1): CHANGED}, parts)
    assert len(kinds) == 6
    assert len(kinds.chunks) == 6
    assert made == []  # counting makes no rows
    rows = [(1, 1), (0, 1), (0, 3), (2, 0), (2, 1), (2, 2)]
    assert list(kinds.chunks) == rows
    assert dict(kinds) == dict(zip(rows, [CHANGED, ADDED, ADDED, 7, 7, 7], strict=True))
    assert kinds.kinds.tolist() == [CHANGED, ADDED, ADDED, 7, 7, 7]
    assert kinds.chunks.coords.tolist() == [list(r) for r in rows]
    assert kinds.chunks == frozenset(rows)
    with pytest.raises(ValueError, match="do not fit"):
        KindArray(ChunkArray(first, second), [np.zeros(1, np.uint8), ADDED])


@pytest.mark.parametrize("in_order", [True, False])
def test_blocks_encode_as_the_tuples_they_hold(in_order: bool) -> None:
    # Blocks in order are compressed one at a time, each made once; out of order (here the
    # second block before the first), every row is gathered and sorted: the same bytes.
    made: list[int] = []
    a = np.stack(np.divmod(np.arange(0, 5_000, dtype=np.int64), 50), axis=1)
    b = np.stack(np.divmod(np.arange(5_000, 9_000, dtype=np.int64), 50), axis=1)
    parts = [(_lazy(a, made), ADDED), (_lazy(b, made), CHANGED)]
    kinds = kind_array(2, {}, parts if in_order else parts[::-1])
    arrays = NodeChange(chunks=kinds.chunks, node_type="array", kinds=kinds)
    tuples = NodeChange(chunks=frozenset(kinds), node_type="array", kinds=dict(kinds))
    made.clear()
    encoded = ChangeSet({"a": arrays}, exact=True).encode()
    assert encoded == ChangeSet({"a": tuples}, exact=True).encode()
    if in_order:
        assert made == [5_000, 4_000]
    decoded = ChangeSet.decode(encoded).nodes["a"]
    assert decoded.kinds == dict(kinds)
    assert decoded.kinds[(99, 49)] == ADDED
