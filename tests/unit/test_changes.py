"""build_snapshot, changes_from_staged and ChangeSet, with an in-memory reader."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fakes import FakeReader, array_doc, group_doc, ref
from zarrlake.errors import CatalogError
from zarrlake.model import (
    ChangeSet,
    ChunkRef,
    NodeChange,
    Root,
    StagedNode,
    StagedState,
    changes_from_staged,
    iter_manifest,
)
from zarrlake.model.changes import ADDED, CHANGED, REMOVED, VIRTUAL_AFTER, VIRTUAL_BEFORE
from zarrlake.model.manifest import SHARD_TARGET, content_hash


def manifest_of(reader: FakeReader, root: Root, path: str) -> dict[tuple[int, ...], ChunkRef]:
    entry = root.nodes[path]
    if entry.manifest is None:
        return {}
    return dict(iter_manifest(reader.index(entry.manifest), reader))


def staged(
    nodes: dict[str, StagedNode] | None = None, raw: dict[str, ChunkRef | None] | None = None
) -> StagedState:
    return StagedState(dict(nodes or {}), dict(raw or {}))


@pytest.fixture
def reader() -> FakeReader:
    return FakeReader()


@pytest.fixture
def base(reader: FakeReader) -> Root:
    """A root group and a 1-d array ``a`` (chunks 0..2 written), plus a raw key."""
    result = reader.build(
        Root(),
        staged(
            {
                "": StagedNode(meta=reader.put_meta(group_doc({"title": "t"}))),
                "a": StagedNode(
                    meta=reader.put_meta(array_doc((30,), (10,), {"units": "K"})),
                    chunks={(0,): ref(0), (1,): ref(1, small=True), (2,): ref(2)},
                ),
            },
            {"extra/key": ref("raw", small=True)},
        ),
    )
    return result.root


# -- building from scratch ----------------------------------------------------------------------


def test_build_from_empty_creates_nodes_and_manifest(reader: FakeReader, base: Root) -> None:
    assert set(base.nodes) == {"", "a"}
    assert base.nodes[""].node_type == "group"
    assert base.nodes[""].manifest is None
    assert base.nodes["a"].node_type == "array"
    assert manifest_of(reader, base, "a") == {(0,): ref(0), (1,): ref(1, small=True), (2,): ref(2)}
    assert dict(base.raw) == {"extra/key": ref("raw", small=True)}


def test_build_from_empty_reports_creations() -> None:
    reader = FakeReader()
    result = reader.build(
        Root(),
        staged(
            {
                "": StagedNode(meta=reader.put_meta(group_doc())),
                "a": StagedNode(meta=reader.put_meta(array_doc((3,))), chunks={(1,): ref(1)}),
            },
            {"k": ref("k")},
        ),
    )
    assert dict(result.changes.nodes) == {
        "": NodeChange(created=True, node_type="group"),
        "a": NodeChange(created=True, chunks=frozenset({(1,)}), node_type="array"),
    }
    assert result.changes.raw == frozenset({"k"})


def test_root_hash_is_content_hash_of_encoded_root(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(chunks={(0,): ref("new")})}))
    assert result.root_hash == content_hash(result.root.encode())
    assert result.blobs[result.root_hash] == ("root", result.root.encode())
    assert Root.decode(result.root.encode()) == result.root


def test_nothing_staged_reproduces_base(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged())
    assert result.root == base
    assert result.root_hash == content_hash(base.encode())
    assert result.changes.is_empty()
    assert set(result.blobs) == {result.root_hash}


def test_array_without_chunks_has_no_manifest(reader: FakeReader) -> None:
    result = reader.build(Root(), staged({"a": StagedNode(meta=reader.put_meta(array_doc()))}))
    assert result.root.nodes["a"].manifest is None


def test_zero_d_array(reader: FakeReader) -> None:
    meta = reader.put_meta(array_doc((), ()))
    result = reader.build(Root(), staged({"s": StagedNode(meta=meta, chunks={(): ref("s")})}))
    assert manifest_of(reader, result.root, "s") == {(): ref("s")}
    assert result.changes.nodes["s"].chunks == frozenset({()})


# -- chunk changes ------------------------------------------------------------------------------


def test_chunk_write_on_top_of_base(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(chunks={(1,): ref("x"), (5,): ref(5)})}))
    assert manifest_of(reader, result.root, "a") == {
        (0,): ref(0),
        (1,): ref("x"),
        (2,): ref(2),
        (5,): ref(5),
    }
    assert result.root.nodes["a"].meta == base.nodes["a"].meta
    assert dict(result.changes.nodes) == {
        "a": NodeChange(chunks=frozenset({(1,), (5,)}), node_type="array")
    }
    # the base is untouched: it is an immutable value
    assert manifest_of(reader, base, "a")[(1,)] == ref(1, small=True)


def test_rewriting_identical_chunk_is_not_a_change(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(chunks={(0,): ref(0)})}))
    assert result.changes.is_empty()
    assert result.root == base


def test_chunk_deletion(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(chunks={(0,): None, (9,): None})}))
    assert manifest_of(reader, result.root, "a") == {(1,): ref(1, small=True), (2,): ref(2)}
    # deleting a chunk that never existed is no change
    assert result.changes.nodes["a"].chunks == frozenset({(0,)})


def test_deleting_every_chunk_drops_the_manifest(reader: FakeReader, base: Root) -> None:
    gone = {(i,): None for i in range(3)}
    result = reader.build(base, staged({"a": StagedNode(chunks=gone)}))
    assert result.root.nodes["a"].manifest is None
    assert result.changes.nodes["a"].chunks == frozenset({(0,), (1,), (2,)})


def test_successive_builds_accumulate(reader: FakeReader, base: Root) -> None:
    root = base
    expected = manifest_of(reader, base, "a")
    for i in range(5):
        root = reader.build(root, staged({"a": StagedNode(chunks={(i + 3,): ref(f"n{i}")})})).root
        expected[(i + 3,)] = ref(f"n{i}")
    assert manifest_of(reader, root, "a") == expected


def test_only_touched_shards_are_loaded_and_rewritten(reader: FakeReader) -> None:
    meta = reader.put_meta(array_doc((3 * SHARD_TARGET,), (1,)))
    chunks = {(0,): ref(0), (SHARD_TARGET,): ref(1), (2 * SHARD_TARGET,): ref(2)}
    first = reader.build(Root(), staged({"a": StagedNode(meta=meta, chunks=chunks)}))
    index1 = reader.index(first.root.nodes["a"].manifest or b"")
    shards1 = index1.shard_map(reader)
    assert len(shards1) == 3

    reader.loads.clear()
    second = reader.build(first.root, staged({"a": StagedNode(chunks={(1,): ref("x")})}))
    assert reader.loads["shard"] == 1
    index2 = reader.index(second.root.nodes["a"].manifest or b"")
    assert index2.shard_shape == index1.shard_shape
    shards2 = index2.shard_map(reader)
    assert shards2[(0,)] != shards1[(0,)]
    assert shards2[(1,)] == shards1[(1,)]
    assert shards2[(2,)] == shards1[(2,)]
    new_kinds = sorted(kind for kind, _ in second.blobs.values())
    assert new_kinds == ["index", "root", "shard"]


def test_shard_emptied_is_removed_from_index(reader: FakeReader) -> None:
    meta = reader.put_meta(array_doc((2 * SHARD_TARGET,), (1,)))
    first = reader.build(
        Root(), staged({"a": StagedNode(meta=meta, chunks={(0,): ref(0), (SHARD_TARGET,): ref(1)})})
    )
    second = reader.build(first.root, staged({"a": StagedNode(chunks={(SHARD_TARGET,): None})}))
    index = reader.index(second.root.nodes["a"].manifest or b"")
    assert set(index.shard_map(reader)) == {(0,)}


def test_shard_shape_is_kept_across_resize(reader: FakeReader) -> None:
    meta1 = reader.put_meta(array_doc((10, 10), (1, 1)))
    first = reader.build(Root(), staged({"a": StagedNode(meta=meta1, chunks={(0, 0): ref(0)})}))
    shape1 = reader.index(first.root.nodes["a"].manifest or b"").shard_shape
    meta2 = reader.put_meta(array_doc((10, 5000), (1, 1)))
    second = reader.build(
        first.root, staged({"a": StagedNode(meta=meta2, chunks={(3, 4000): ref(1)})})
    )
    index2 = reader.index(second.root.nodes["a"].manifest or b"")
    assert index2.shard_shape == shape1
    assert manifest_of(reader, second.root, "a") == {(0, 0): ref(0), (3, 4000): ref(1)}


# -- metadata changes ---------------------------------------------------------------------------


def test_attribute_change_keeps_manifest(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((30,), (10,), {"units": "C", "new": 1}))
    result = reader.build(base, staged({"a": StagedNode(meta=meta)}))
    assert result.root.nodes["a"].manifest == base.nodes["a"].manifest
    assert result.root.nodes["a"].meta == meta
    assert dict(result.changes.nodes) == {
        "a": NodeChange(attrs=frozenset({"units", "new"}), node_type="array")
    }


def test_identical_metadata_rewrite_is_no_change(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((30,), (10,), {"units": "K"}))
    assert meta == base.nodes["a"].meta
    result = reader.build(base, staged({"a": StagedNode(meta=meta)}))
    assert result.changes.is_empty()


def test_resize_is_a_structure_change_and_keeps_chunks(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((60,), (10,), {"units": "K"}))
    result = reader.build(base, staged({"a": StagedNode(meta=meta)}))
    change = result.changes.nodes["a"]
    assert change.structure
    assert change.attrs == frozenset()
    assert not change.created
    assert manifest_of(reader, result.root, "a") == manifest_of(reader, base, "a")


def test_ndim_change_discards_old_chunks(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((30, 2), (10, 1), {"units": "K"}))
    result = reader.build(base, staged({"a": StagedNode(meta=meta, chunks={(0, 1): ref("2d")})}))
    assert manifest_of(reader, result.root, "a") == {(0, 1): ref("2d")}
    assert result.changes.nodes["a"].structure


def test_array_becoming_group_loses_manifest(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(meta=reader.put_meta(group_doc()))}))
    entry = result.root.nodes["a"]
    assert entry.node_type == "group"
    assert entry.manifest is None
    assert result.changes.nodes["a"].structure


def test_unknown_document_counts_as_structure_change(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(b"not json")
    result = reader.build(base, staged({"": StagedNode(meta=meta)}))
    assert result.root.nodes[""].node_type == "unknown"
    assert result.changes.nodes[""] == NodeChange(structure=True, node_type="unknown")


# -- dropping nodes -----------------------------------------------------------------------------


def test_drop_removes_node(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"a": StagedNode(dropped=True)}))
    assert "a" not in result.root.nodes
    assert dict(result.changes.nodes) == {"a": NodeChange(deleted=True, node_type="array")}


def test_drop_of_absent_node_is_no_change(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"zzz": StagedNode(dropped=True)}))
    assert result.changes.is_empty()
    assert result.root == base


def test_drop_and_recreate_starts_with_no_chunks(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((30,), (10,), {"units": "K"}))
    result = reader.build(
        base, staged({"a": StagedNode(dropped=True, meta=meta, chunks={(2,): ref("y")})})
    )
    assert manifest_of(reader, result.root, "a") == {(2,): ref("y")}
    assert result.changes.nodes["a"] == NodeChange(
        created=True, deleted=True, chunks=frozenset({(2,)}), node_type="array"
    )


def test_chunks_staged_for_a_missing_node_are_ignored(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged({"nope": StagedNode(chunks={(0,): ref(0)})}))
    assert "nope" not in result.root.nodes
    assert result.changes.is_empty()


# -- raw keys -----------------------------------------------------------------------------------


def test_raw_key_changes(reader: FakeReader, base: Root) -> None:
    result = reader.build(
        base,
        staged(raw={"extra/key": None, "other": ref("o"), "never/was": None}),
    )
    assert dict(result.root.raw) == {"other": ref("o")}
    assert result.changes.raw == frozenset({"extra/key", "other"})


def test_raw_rewrite_same_ref_is_no_change(reader: FakeReader, base: Root) -> None:
    result = reader.build(base, staged(raw={"extra/key": ref("raw", small=True)}))
    assert result.changes.is_empty()


# -- changes_from_staged ------------------------------------------------------------------------


def test_changes_from_staged_counts_every_staged_chunk(reader: FakeReader, base: Root) -> None:
    st_ = staged({"a": StagedNode(chunks={(0,): ref(0), (7,): None})})
    cs = changes_from_staged(base, st_, reader)
    assert cs.nodes["a"].chunks == frozenset({(0,), (7,)})
    assert not cs.nodes["a"].created
    assert not cs.nodes["a"].meta_changed


def test_changes_from_staged_metadata(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((40,), (10,), {"units": "K", "x": 1}))
    new_group = reader.put_meta(group_doc())
    st_ = staged(
        {
            "a": StagedNode(meta=meta),
            "g": StagedNode(meta=new_group),
            "": StagedNode(dropped=True),
            "absent": StagedNode(dropped=True),
        },
        {"r": None},
    )
    cs = changes_from_staged(base, st_, reader)
    assert cs.nodes["a"] == NodeChange(structure=True, attrs=frozenset({"x"}))
    assert cs.nodes["g"] == NodeChange(created=True)
    assert cs.nodes[""] == NodeChange(deleted=True)
    assert not cs.nodes["absent"].touched
    assert cs.raw == frozenset({"r"})


def test_changes_from_staged_drop_and_recreate(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((30,), (10,)))
    cs = changes_from_staged(base, staged({"a": StagedNode(dropped=True, meta=meta)}), reader)
    assert cs.nodes["a"].created
    assert cs.nodes["a"].deleted
    assert not cs.nodes["a"].structure  # the old node is gone; nothing to compare against


# -- NodeChange / ChangeSet ---------------------------------------------------------------------


def test_node_change_flags() -> None:
    assert not NodeChange().touched
    assert NodeChange(attrs=frozenset({"a"})).meta_changed
    assert NodeChange(structure=True).meta_changed
    assert not NodeChange(chunks=frozenset({(0,)})).meta_changed
    assert NodeChange(chunks=frozenset({(0,)})).touched
    assert NodeChange(created=True).touched
    assert NodeChange(deleted=True).touched


def test_change_set_is_empty() -> None:
    assert ChangeSet().is_empty()
    assert ChangeSet({"a": NodeChange()}).is_empty()
    assert not ChangeSet({"a": NodeChange(deleted=True)}).is_empty()
    assert not ChangeSet(raw=frozenset({"k"})).is_empty()


@st.composite
def node_changes(draw: st.DrawFn) -> NodeChange:
    ndim = draw(st.integers(0, 4))
    coords = st.lists(st.integers(0, 2**40), min_size=ndim, max_size=ndim).map(tuple)
    chunks = draw(st.frozensets(coords, max_size=30))
    return NodeChange(
        created=draw(st.booleans()),
        deleted=draw(st.booleans()),
        structure=draw(st.booleans()),
        attrs=draw(st.frozensets(st.text(max_size=8), max_size=4)),
        chunks=chunks,
        node_type=draw(st.sampled_from(["", "group", "array", "unknown"])),
    )


paths = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(
    nodes=st.dictionaries(paths, node_changes(), max_size=6),
    raw=st.frozensets(paths, max_size=5),
)
def test_change_set_round_trip(nodes: dict[str, NodeChange], raw: frozenset[str]) -> None:
    cs = ChangeSet(nodes, raw)
    data = cs.encode()
    back = ChangeSet.decode(data)
    assert back == cs
    assert back.encode() == data


def test_change_set_encoding_is_canonical() -> None:
    a = ChangeSet(
        {"x": NodeChange(chunks=frozenset({(1, 2), (0, 5)})), "a": NodeChange(created=True)},
        frozenset({"k2", "k1"}),
    )
    b = ChangeSet(
        {"a": NodeChange(created=True), "x": NodeChange(chunks=frozenset({(0, 5), (1, 2)}))},
        frozenset({"k1", "k2"}),
    )
    assert a.encode() == b.encode()


def test_build_change_set_survives_encoding(reader: FakeReader, base: Root) -> None:
    meta = reader.put_meta(array_doc((60,), (10,), {"units": "C"}))
    result = reader.build(
        base,
        staged(
            {"a": StagedNode(meta=meta, chunks={(4,): ref(4)}), "": StagedNode(dropped=True)},
            {"extra/key": None},
        ),
    )
    assert ChangeSet.decode(result.changes.encode()) == result.changes


@pytest.mark.parametrize(
    "data",
    [b"garbage", b"{}", b'{"v":1,"nodes":{"a":{"k":[1,1,"!!!"]}},"raw":[]}'],
    ids=["not-json", "no-fields", "bad-chunks"],
)
def test_change_set_decode_corrupt_raises_catalog_error(data: bytes) -> None:
    with pytest.raises(CatalogError):
        ChangeSet.decode(data)


def test_rewriting_the_same_bytes_with_a_checksum_is_no_change(
    reader: FakeReader, base: Root
) -> None:
    """A chunk (or raw key) committed before read checksums, written again with the same
    bytes: its ref gains a checksum, and the commit records no change to it."""
    (c0, old0), (c2, old2) = ((0,), ref(0)), ((2,), ref(2))
    assert old0.crc is None
    with_crc = ChunkRef(old0.hash, old0.length, crc=1234)
    moved = ChunkRef(old2.hash, old2.length, pack=b"p" * 32, offset=64, crc=99)
    raw = ChunkRef(content_hash(b"raw bytes"), 600)
    first = reader.build(base, staged(raw={"extra/other": raw}))
    result = reader.build(
        first.root,
        staged(
            {"a": StagedNode(chunks={c0: with_crc, c2: moved})},
            {"extra/other": ChunkRef(raw.hash, raw.length, crc=5)},
        ),
    )
    assert result.changes.nodes.get("a", NodeChange()).chunks == frozenset()
    assert result.changes.raw == frozenset()
    manifest = manifest_of(reader, result.root, "a")
    assert manifest[c0] == with_crc  # the checksum is kept for later reads
    assert manifest[c2] == moved
    assert result.root.raw["extra/other"].crc == 5


def test_a_change_set_keeps_how_each_chunk_changed() -> None:
    kinds = {(0, 1): ADDED | VIRTUAL_AFTER, (2, 0): CHANGED | VIRTUAL_BEFORE, (5, 5): REMOVED}
    nodes = {
        "a": NodeChange(chunks=frozenset(kinds), node_type="array", kinds=kinds),
        "g": NodeChange(attrs=frozenset({"x"}), kinds={}),
    }
    back = ChangeSet.decode(ChangeSet(nodes, exact=True).encode())
    assert back.exact
    assert back.nodes["a"].kinds == kinds
    assert back.nodes["g"].kinds == {}  # known: no chunk changed
    unknown = ChangeSet({"a": NodeChange(chunks=frozenset(kinds))}).encode()
    assert ChangeSet.decode(unknown).nodes["a"].kinds is None
    assert not ChangeSet.decode(unknown).exact


def test_a_change_set_whose_chunk_kinds_do_not_match_its_chunks_is_corrupt() -> None:
    two = {(0,): ADDED, (1,): ADDED}
    doc = json.loads(ChangeSet({"a": NodeChange(chunks=frozenset(two), kinds=two)}).encode())
    one = json.loads(
        ChangeSet({"a": NodeChange(chunks=frozenset({(0,)}), kinds={(0,): ADDED})}).encode()
    )
    doc["nodes"]["a"]["m"] = one["nodes"]["a"]["m"]
    with pytest.raises(CatalogError, match="change set is corrupt: 1 chunk kinds for 2 chunks"):
        ChangeSet.decode(json.dumps(doc).encode())
