"""A batch left in the catalog (:class:`StagedBatches.leave`) answers which chunks it holds
exactly as given, whatever form its indices are kept in, and an import's whole shards cost the
same memory however many chunks they hold."""

from __future__ import annotations

import tracemalloc
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrlake.model.staged_batches import StagedBatches

# sorted, distinct flat indices: runs of consecutive ones, scattered ones, and some past int32
runs = st.lists(st.tuples(st.integers(0, 2**33), st.integers(1, 300)), max_size=6)


def _indices(spans: list[tuple[int, int]], scattered: list[int]) -> np.ndarray:
    flat = {i for start, n in spans for i in range(start, start + n)} | set(scattered)
    return np.array(sorted(flat), np.int64)


def _unreachable(pos: tuple[int, ...]) -> NoReturn:
    raise AssertionError("no batch is read back here")


@given(runs, st.lists(st.integers(0, 5000), max_size=40), st.lists(st.integers(0, 2**34)))
def test_a_left_batch_answers_its_indices_count_and_membership_as_given(
    spans: list[tuple[int, int]], scattered: list[int], probes: list[int]
) -> None:
    flat = _indices(spans, scattered)
    batches = StagedBatches(_unreachable)
    batches.leave((3,), b"h" * 32, flat)
    np.testing.assert_array_equal(batches.flat((3,)), flat)
    assert batches.count((3,)) == len(flat)
    assert batches.staged_hash((3,)) == b"h" * 32
    present = set(flat.tolist())
    for p in [*probes, *flat[:5].tolist(), *(flat[-3:] + 1).tolist()]:
        assert batches.holds((3,), p) == (p in present)
    assert not batches.holds((4,), int(flat[0]) if len(flat) else 0)


def test_a_left_batch_is_a_copy_of_the_indices_it_was_given() -> None:
    flat = np.arange(10, 20, dtype=np.int64)
    batches = StagedBatches(_unreachable)
    batches.leave((0,), b"h" * 32, flat)
    flat[:] = 0
    np.testing.assert_array_equal(batches.flat((0,)), np.arange(10, 20))


@pytest.mark.parametrize("per_shard", [1_000, 10_000])
def test_whole_shards_left_cost_the_same_memory_whatever_their_size(per_shard: int) -> None:
    flats = [np.arange(per_shard, dtype=np.int64) for _ in range(200)]
    batches = StagedBatches(_unreachable)
    tracemalloc.start()
    try:
        for i, flat in enumerate(flats):
            batches.leave((i,), b"h" * 32, flat)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # int32 indices would be 4 bytes a chunk: 800 kB and 8 MB; each whole shard is one run
    assert held < 200 * 600, held
    assert batches.count((7,)) == per_shard
