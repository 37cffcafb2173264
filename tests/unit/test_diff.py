"""Diffs of snapshots (model/diff.py): exact node, metadata and chunk changes, at a cost that
follows the change."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.unit.fakes import FakeReader, array_doc, group_doc, ref
from zarrlake.model import NodeEntry, Root, Shard, StagedNode, StagedState
from zarrlake.model.diff import ABSENT, Diff, FieldChange, diff_roots
from zarrlake.model.manifest import content_hash


def build(reader: FakeReader, base: Root, **nodes: StagedNode) -> Root:
    staged = StagedState({k.replace("__", "/"): v for k, v in nodes.items()})
    return reader.build(base, staged).root


def array(
    reader: FakeReader, refs: dict[tuple[int, ...], Any] | None = None, **doc: Any
) -> StagedNode:
    return StagedNode(meta=reader.put_meta(array_doc(**doc)), chunks=dict(refs or {}))


def group(reader: FakeReader, **attrs: Any) -> StagedNode:
    return StagedNode(meta=reader.put_meta(group_doc(attrs)))


def base_tree(reader: FakeReader) -> Root:
    return build(
        reader,
        Root(),
        **{
            "": group(reader),
            "g": group(reader, title="x"),
            "g__a": array(
                reader, {(0,): ref(0), (1,): ref(1), (2,): ref(2)}, shape=(30,), chunks=(10,)
            ),
        },
    )


def test_identical_roots_have_an_empty_diff_and_load_nothing() -> None:
    reader = FakeReader()
    root = base_tree(reader)
    reader.loads.clear()
    d = diff_roots(root, root, reader)
    assert d.is_empty()
    assert not d
    assert len(d) == 0
    assert sum(reader.loads.values()) == 0


def test_added_and_removed_nodes_list_all_their_chunks() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g__a=StagedNode(dropped=True),
        h=group(reader),
        h__b=array(
            reader, {(0, 0): ref("b0"), (1, 2): ref("b1", small=True)}, shape=(4, 6), chunks=(2, 2)
        ),
    )
    d = diff_roots(before, after, reader)
    assert [(n.path, n.status, n.node_type) for n in d] == [
        ("g/a", "removed", "array"),
        ("h", "added", "group"),
        ("h/b", "added", "array"),
    ]
    assert d["g/a"].chunks_removed == {(0,), (1,), (2,)}
    assert d["h/b"].chunks_added == {(0, 0), (1, 2)}
    assert [n.path for n in d.added] == ["h", "h/b"]
    assert [n.path for n in d.removed] == ["g/a"]
    assert d.modified == ()


def test_chunks_added_changed_removed_and_tombstones() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g__a=StagedNode(chunks={(0,): None, (1,): ref("new"), (2,): ref(2), (5,): ref(5)}),
    )
    d = diff_roots(before, after, reader)
    node = d["g/a"]
    assert node.status == "modified"
    assert node.metadata == ()
    assert node.attributes == ()
    # (0,) deleted (zarr deletes chunks equal to the fill value), (2,) rewritten identically
    assert (node.chunks_added, node.chunks_changed, node.chunks_removed) == (
        {(5,)},
        {(1,)},
        {(0,)},
    )
    assert node.n_chunks == 3


def test_metadata_changes_are_shown_field_by_field() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    doc = array_doc(shape=(30,), chunks=(10,))
    changed = dict(
        doc,
        shape=[50],
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": [5]}},
        data_type="int64",
        fill_value=-1,
        codecs=[{"name": "bytes", "configuration": {"endian": "big"}}],
        attributes={"units": "m"},
    )
    after = build(reader, before, g__a=StagedNode(meta=reader.put_meta(changed)))
    node = diff_roots(before, after, reader)["g/a"]
    assert node.metadata == (
        FieldChange("shape", [30], [50]),
        FieldChange("chunks", [10], [5]),
        FieldChange("dtype", "int32", "int64"),
        FieldChange("fill_value", 0, -1),
        FieldChange(
            "codecs",
            [{"name": "bytes", "configuration": {"endian": "little"}}],
            [{"name": "bytes", "configuration": {"endian": "big"}}],
        ),
    )
    assert node.attributes == (FieldChange("units", ABSENT, "m"),)


def test_attribute_changes_list_added_changed_and_removed_keys() -> None:
    reader = FakeReader()
    before = build(reader, Root(), g=group(reader, a=1, b=2, c=3))
    after = build(reader, before, g=group(reader, a=1, b=20, d=4))
    node = diff_roots(before, after, reader)["g"]
    assert node.status == "modified"
    assert node.metadata == ()
    assert node.attributes == (
        FieldChange("b", 2, 20),
        FieldChange("c", 3, ABSENT),
        FieldChange("d", ABSENT, 4),
    )


def test_reformatted_identical_metadata_is_not_a_change() -> None:
    reader = FakeReader()
    before = build(reader, Root(), g=group(reader, a=1))
    same = reader.put_meta(b'{"zarr_format": 3,   "node_type": "group", "attributes": {"a": 1}}')
    after = build(reader, before, g=StagedNode(meta=same))
    assert diff_roots(before, after, reader).is_empty()


def test_resize_shows_shape_and_the_chunks_it_dropped() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g__a=StagedNode(
            meta=reader.put_meta(array_doc(shape=(15,), chunks=(10,))), chunks={(2,): None}
        ),
    )
    node = diff_roots(before, after, reader)["g/a"]
    assert node.metadata == (FieldChange("shape", [30], [15]),)
    assert node.chunks_removed == {(2,)}
    assert not node.chunks_added
    assert not node.chunks_changed


def test_group_replaced_by_array_is_a_modified_node() -> None:
    reader = FakeReader()
    before = build(reader, Root(), g=group(reader))
    after = build(
        reader,
        before,
        g=StagedNode(dropped=True, meta=reader.put_meta(array_doc()), chunks={(3,): ref(3)}),
    )
    node = diff_roots(before, after, reader)["g"]
    assert node.status == "modified"
    assert node.node_type == "array"
    assert node.metadata[0] == FieldChange("node_type", "group", "array")
    assert node.chunks_added == {(3,)}


def test_array_of_another_rank_replaces_every_chunk() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g__a=StagedNode(
            dropped=True,
            meta=reader.put_meta(array_doc(shape=(4, 4), chunks=(2, 2))),
            chunks={(0, 0): ref("x")},
        ),
    )
    node = diff_roots(before, after, reader)["g/a"]
    assert node.chunks_added == {(0, 0)}
    assert node.chunks_removed == {(0,), (1,), (2,)}
    assert node.chunks_changed == frozenset()


def test_raw_keys_added_changed_removed() -> None:
    reader = FakeReader()
    before = Root({}, {"x": ref("x"), "y": ref("y"), "z": ref("z")})
    after = Root({}, {"x": ref("x"), "y": ref("y2"), "w": ref("w")})
    d = diff_roots(before, after, reader)
    assert (d.keys_added, d.keys_changed, d.keys_removed) == ({"w"}, {"y"}, {"z"})
    assert d.summary().as_dict()["keys_changed"] == 1


def test_summary_counts_nodes_and_chunks() -> None:
    reader = FakeReader()
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g=StagedNode(dropped=True),
        g__a=StagedNode(dropped=True),
        k=array(reader, {(0,): ref("k")}),
    )
    s = diff_roots(before, after, reader).summary()
    assert (s.nodes_added, s.nodes_removed, s.nodes_modified) == (1, 2, 0)
    assert (s.chunks_added, s.chunks_changed, s.chunks_removed) == (1, 0, 3)


# -- cost follows the change -------------------------------------------------------------------


def _big_array(reader: FakeReader, n: int, shard: int) -> Root:
    """A 1-d array of ``n`` chunks in shards of ``shard`` refs, built directly (fast)."""
    shards = {}
    for pos in range(n // shard):
        flat = np.arange(shard, dtype=np.int64)
        hashes = np.zeros((shard, 32), np.uint8)
        hashes[:, :8] = (flat + pos * shard).astype("<u8").view(np.uint8).reshape(shard, 8)
        sh = Shard(
            flat,
            hashes,
            np.full(shard, 1000, np.uint64),
            np.zeros(shard, np.uint8),
            np.zeros(shard, np.uint64),
            b"",
        )
        data = sh.encode()
        h = content_hash(data)
        reader.add({h: ("shard", data)})
        shards[(pos,)] = h
    ih = reader.put_index((shard,), shards)
    meta = reader.put_meta(array_doc(shape=(n,), chunks=(1,)))
    return Root({"big": NodeEntry("array", meta, ih)})


def test_diff_loads_only_the_shards_the_change_touched() -> None:
    reader = FakeReader()
    n, shard = 1_000_000, 10_000
    before = _big_array(reader, n, shard)
    # 100 chunks changed, spread over 3 of the 100 shards
    touched = [5, 17, 9_999, 250_000, 250_001, *range(999_905, 1_000_000)]
    assert len(touched) == 100
    after = build(reader, before, big=StagedNode(chunks={(i,): ref(f"v{i}") for i in touched}))
    reader.loads.clear()
    d = diff_roots(before, after, reader)
    assert d["big"].chunks_changed == {(i,) for i in touched}
    shards_touched = len({i // shard for i in touched})
    assert shards_touched == 3
    # one shard per side per touched position; none of the 97 others
    assert reader.loads["shard"] == 2 * shards_touched
    assert reader.loads["index"] == 2


# -- display -----------------------------------------------------------------------------------


def _sample_diff(reader: FakeReader) -> Diff:
    before = base_tree(reader)
    after = build(
        reader,
        before,
        g=group(reader, title="<b>y</b>"),
        g__a=StagedNode(chunks={(0,): None, (7,): ref(7)}),
        **{"<script>": group(reader)},
    )
    return diff_roots(before, after, reader, labels=("a" * 20, "b" * 20))


def test_repr_lists_nodes_with_their_changes() -> None:
    text = repr(_sample_diff(FakeReader()))
    assert text.splitlines()[0] == (
        "<Diff aaaaaaaaaa..bbbbbbbbbb: 1 added, 0 removed, 2 modified; chunks +1 ~0 -1>"
    )
    assert "  + /<script> (group)" in text
    assert """  ~ /g (group); attributes['title']: "x" -> "<b>y</b>\"""" in text
    assert "  ~ /g/a (array); chunks +1 -1" in text


def test_repr_html_escapes_names_and_values() -> None:
    page = _sample_diff(FakeReader())._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "&lt;b&gt;y&lt;/b&gt;" in page
    assert page.count("<tr>") == 4  # header + 3 nodes


def test_to_dataframe_one_row_per_node_or_per_chunk() -> None:
    d = _sample_diff(FakeReader())
    df = d.to_dataframe()
    assert list(df["path"]) == ["<script>", "g", "g/a"]
    assert list(df["status"]) == ["added", "modified", "modified"]
    assert list(df["attributes"]) == [[], ["title"], []]
    assert list(df["chunks_added"]) == [0, 0, 1]
    assert list(df["chunks_removed"]) == [0, 0, 1]
    per_chunk = d.to_dataframe(chunks=True)
    assert per_chunk.to_dict("records") == [
        {"path": "g/a", "chunk": (7,), "change": "added"},
        {"path": "g/a", "chunk": (0,), "change": "removed"},
    ]


def test_empty_diff_to_dataframe_has_the_columns() -> None:
    df = Diff().to_dataframe()
    assert df.empty
    assert "chunks_changed" in df.columns


def test_diff_pickles_with_its_absent_markers() -> None:
    import pickle

    d = _sample_diff(FakeReader())
    again = pickle.loads(pickle.dumps(d))
    assert again == d
    assert again["g"].attributes[0].field == "title"
    node = Diff((again["g/a"],))["g/a"]
    assert node.chunks_added == {(7,)}
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
