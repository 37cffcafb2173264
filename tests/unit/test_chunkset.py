"""The array-backed change set parts behave as the frozenset and mapping they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from zarrlake.model.changes import ADDED, CHANGED, ChangeSet, NodeChange
from zarrlake.model.chunkset import ChunkArray, KindArray, kind_array


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
