"""The manifest index tree: lookups, updates, canonical shape, deltas, the old JSON format."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.fakes import FakeReader, array_doc, ref
from zarrlake.errors import CatalogError
from zarrlake.model import NODE_KIND, ManifestIndex, Root, StagedNode, StagedState, iter_manifest
from zarrlake.model.index import IndexNode, block_shape_for, index_delta
from zarrlake.model.manifest import content_hash

Pos = tuple[int, ...]


def h(tag: object) -> bytes:
    return content_hash(repr(tag).encode())


def build(
    reader: FakeReader,
    changes: Mapping[Pos, bytes | None],
    base: ManifestIndex | None = None,
    *,
    shard_shape: Pos = (10,),
    grid: Pos | None = None,
) -> tuple[ManifestIndex | None, dict[bytes, tuple[str, bytes]]]:
    """Apply ``changes`` to ``base`` (or an empty index); keep the new nodes in ``reader``."""
    blobs: dict[bytes, tuple[str, bytes]] = {}
    start = base if base is not None else ManifestIndex.empty(shard_shape, grid)
    index = start.updated(changes, reader, blobs)
    reader.add(blobs)
    if index is not None:
        data = index.encode()
        reader.add({content_hash(data): ("index", data)})
    return index, blobs


def test_block_shape_has_at_least_two_per_dimension() -> None:
    assert block_shape_for([100_000], 1) == (256,)
    assert block_shape_for([10_000, 10], 2) == (25, 10)
    assert all(b >= 2 for b in block_shape_for([1000, 1, 1], 3))
    assert block_shape_for([], 0) == ()


def test_one_shard_in_a_deep_tree_rewrites_only_its_path() -> None:
    reader = FakeReader()
    shards = {(i,): h(i) for i in range(100_000)}
    index, _ = build(reader, shards, grid=(100_000,))
    assert index is not None
    assert index.depth == 3  # 256^2 < 100,000 <= 256^3
    updated, blobs = build(reader, {(70_000,): h("new")}, index)
    assert updated is not None
    assert sorted(kind for kind, _ in blobs.values()) == [NODE_KIND, NODE_KIND]
    assert sum(len(d) for _, d in blobs.values()) < 20_000
    assert updated.shard_at((70_000,), reader) == h("new")
    assert updated.shard_at((70_001,), reader) == h(70_001)


def test_lookup_loads_one_node_per_level() -> None:
    reader = FakeReader()
    index, _ = build(reader, {(i,): h(i) for i in range(0, 10_000_000, 97)}, grid=(10**7,))
    assert index is not None
    reader.loads.clear()
    assert index.shard_at((97 * 1234,), reader) == h(97 * 1234)
    assert reader.loads[NODE_KIND] == index.depth - 1


@pytest.mark.parametrize(
    "pos", [(5,), (-1,), (10**12,), (1, 2)], ids=["absent", "negative", "far", "wrong-rank"]
)
def test_lookup_of_unpopulated_positions_finds_nothing(pos: Pos) -> None:
    reader = FakeReader()
    index, _ = build(reader, {(0,): h(0), (7,): h(7)})
    assert index is not None
    assert index.shard_at(pos, reader) is None


def test_the_tree_grows_and_shrinks_to_the_least_depth() -> None:
    reader = FakeReader()
    small, _ = build(reader, {(0,): h(0), (3,): h(3)})
    assert small is not None
    assert small.depth == 1
    grown, _ = build(reader, {(10**9,): h("far")}, small)
    assert grown is not None
    assert grown.depth == 4  # 256^3 < 10^9 + 1 <= 256^4
    assert grown.shard_map(reader) == {(0,): h(0), (3,): h(3), (10**9,): h("far")}
    shrunk, _ = build(reader, {(10**9,): None}, grown)
    assert shrunk is not None
    assert shrunk.encode() == small.encode()


def test_removing_every_shard_leaves_no_index() -> None:
    reader = FakeReader()
    index, _ = build(reader, {(1,): h(1), (900,): h(900)})
    emptied, blobs = build(reader, {(1,): None, (900,): None}, index)
    assert emptied is None
    assert blobs == {}


def test_zero_dimensional_array_has_one_shard() -> None:
    reader = FakeReader()
    index, _ = build(reader, {(): h("scalar")}, shard_shape=())
    assert index is not None
    back = ManifestIndex.decode(index.encode())
    assert back.shard_map(reader) == {(): h("scalar")}


def test_two_dimensional_round_trip() -> None:
    reader = FakeReader()
    shards = {(i, j): h((i, j)) for i in range(0, 3000, 7) for j in range(0, 40, 3)}
    index, _ = build(reader, shards, shard_shape=(1, 1024), grid=(3000, 40))
    assert index is not None
    back = ManifestIndex.decode(index.encode())
    assert back.block_shape == index.block_shape
    assert back.shard_map(reader) == shards


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.tuples(st.integers(0, 2_000), st.integers(0, 70_000)),
            st.one_of(st.none(), st.integers(0, 3)),
        ),
        max_size=60,
    ),
    split=st.integers(0, 60),
)
def test_updates_match_a_dict_and_the_shape_depends_only_on_content(
    ops: list[tuple[Pos, int | None]], split: int
) -> None:
    reader = FakeReader()
    model: dict[Pos, bytes] = {}
    index: ManifestIndex | None = None
    cut = min(split, len(ops))
    for batch in (ops[:cut], ops[cut:]):
        changes = {p: (None if v is None else h(v)) for p, v in batch}
        for p, v in changes.items():
            if v is None:
                model.pop(p, None)
            else:
                model[p] = v
        base = index or ManifestIndex.empty((4, 4), (500, 17_500))
        index, _ = build(reader, changes, base)
    assert (index.shard_map(reader) if index is not None else {}) == model
    # the same shards written at once give the very same index
    direct, _ = build(reader, model, ManifestIndex.empty((4, 4), (500, 17_500)))
    assert (direct.encode() if direct else None) == (index.encode() if index else None)


@settings(max_examples=40, deadline=None)
@given(
    a=st.dictionaries(st.integers(0, 200_000).map(lambda x: (x,)), st.integers(0, 2), max_size=40),
    b=st.dictionaries(st.integers(0, 200_000).map(lambda x: (x,)), st.integers(0, 2), max_size=40),
)
def test_delta_lists_exactly_the_differing_positions(a: dict[Pos, int], b: dict[Pos, int]) -> None:
    reader = FakeReader()
    ia, _ = build(reader, {p: h(v) for p, v in a.items()})
    ib, _ = build(reader, {p: h(v) for p, v in b.items()})
    got = {p: (x, y) for p, x, y in index_delta(ia, ib, reader)}
    want = {
        p: (h(a[p]) if p in a else None, h(b[p]) if p in b else None)
        for p in set(a) | set(b)
        if a.get(p) != b.get(p)
    }
    assert got == want


def test_delta_of_one_change_in_a_big_tree_loads_only_its_path() -> None:
    reader = FakeReader()
    index, _ = build(reader, {(i,): h(i) for i in range(100_000)})
    changed, _ = build(reader, {(42_000,): h("x")}, index)
    reader.loads.clear()
    delta = index_delta(index, changed, reader)
    assert delta == [((42_000,), h(42_000), h("x"))]
    assert reader.loads[NODE_KIND] == 2 * (index.depth - 1)  # type: ignore[union-attr]


def test_old_json_index_is_read_and_rewritten_as_a_tree_on_update() -> None:
    reader = FakeReader()
    legacy = {(0, 0): h("a"), (3, 1): h("b"), (1, 7): h("c")}
    doc = {
        "shard_shape": [100, 10],
        "shards": sorted([list(k), v.hex()] for k, v in legacy.items()),
    }
    old = ManifestIndex.decode(json.dumps(doc).encode())
    assert not old.is_tree
    assert old.shard_at((3, 1), reader) == h("b")
    assert old.shard_map(reader) == legacy
    new, _ = build(reader, {(3, 1): h("b2")}, old)
    assert new is not None
    assert new.is_tree
    assert new.shard_shape == (100, 10)
    assert new.shard_map(reader) == {**legacy, (3, 1): h("b2")}
    assert index_delta(old, new, reader) == [((3, 1), h("b"), h("b2"))]


@pytest.mark.parametrize(
    "data",
    [b"garbage", b"{}", b'{"shard_shape": [1]}', b"ZLI2", b"ZLI2\x01\x01" + b"\x00" * 20],
)
def test_corrupt_index_raises_catalog_error(data: bytes) -> None:
    with pytest.raises(CatalogError):
        ManifestIndex.decode(data)


@pytest.mark.parametrize("data", [b"", b"ZLN1", b"ZLN1\x00\x01\x00\x00\x00\x00", b"XXXX" * 8])
def test_corrupt_index_node_raises_catalog_error(data: bytes) -> None:
    with pytest.raises(CatalogError):
        IndexNode.decode(data)


def test_node_at_the_wrong_level_is_refused() -> None:
    reader = FakeReader()
    index, _ = build(reader, {(i,): h(i) for i in range(0, 300_000, 1000)})
    assert index is not None
    assert index.depth == 3
    # swap a level-2 child for a level-1 node: a lookup must notice, not misread shards
    leaf = IndexNode(1, {(0,): h("shard")})
    data = leaf.encode(1)
    reader.add({content_hash(data): (NODE_KIND, data)})
    bad = ManifestIndex(index.shard_shape, index.block_shape, 3, {(0,): content_hash(data)})
    with pytest.raises(CatalogError, match="level"):
        bad.shard_at((5,), reader)


@settings(max_examples=25, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.tuples(st.integers(0, 99_999), st.integers(0, 99_999)),
            st.one_of(st.none(), st.integers(0, 5)),
        ),
        min_size=1,
        max_size=40,
    ),
    batches=st.integers(1, 4),
)
def test_chunk_writes_and_deletes_over_a_sparse_grid_match_a_dict(
    ops: list[tuple[Pos, int | None]], batches: int
) -> None:
    """Through build_snapshot: a 10^10-chunk grid, written sparsely in several commits."""
    reader = FakeReader()
    meta = reader.put_meta(array_doc((100_000, 100_000), (1, 1)))
    root = reader.build(Root(), StagedState({"a": StagedNode(meta=meta)})).root
    model: dict[Pos, object] = {}
    step = max(1, len(ops) // batches)
    for i in range(0, len(ops), step):
        chunks = {}
        for coords, v in ops[i : i + step]:
            chunks[coords] = None if v is None else ref(v)
            if v is None:
                model.pop(coords, None)
            else:
                model[coords] = ref(v)
        root = reader.build(root, StagedState({"a": StagedNode(chunks=chunks)})).root
    manifest = root.nodes["a"].manifest
    got = dict(iter_manifest(reader.index(manifest), reader)) if manifest is not None else {}
    assert got == model
