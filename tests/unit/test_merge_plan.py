"""Three-way merge planning (model/merge.py): the source's changes as staged state, conflicts
against the target's, and the strategies."""

from __future__ import annotations

from typing import Any

from tests.unit.fakes import FakeReader, array_doc, group_doc, ref
from zarrlake.model import Root, StagedNode, StagedState
from zarrlake.model.conflicts import Solver
from zarrlake.model.diff import diff_roots
from zarrlake.model.merge import plan_merge, staged_changes

HEAD = "head-commit"


def build(reader: FakeReader, base: Root, **nodes: StagedNode) -> Root:
    staged = StagedState({k.replace("__", "/"): v for k, v in nodes.items()})
    return reader.build(base, staged).root


def chunks(**refs: Any) -> StagedNode:
    return StagedNode(chunks={(int(k[1:]),): v for k, v in refs.items()})


def start(reader: FakeReader) -> Root:
    return build(
        reader,
        Root(),
        **{
            "": StagedNode(meta=reader.put_meta(group_doc())),
            "a": StagedNode(
                meta=reader.put_meta(array_doc(shape=(10,), attrs={"k": 0})),
                chunks={(i,): ref(f"base{i}") for i in range(10)},
            ),
        },
    )


def merged(
    reader: FakeReader, base: Root, target: Root, source: Root, strategy: Solver = "fail"
) -> tuple[Root, list[Any]]:
    plan = plan_merge(base, target, source, reader, target_id=HEAD, solver=strategy)
    reader.add(plan.blobs)
    return reader.build(target, plan.staged).root, plan.conflicts


def chunk_hashes(reader: FakeReader, root: Root) -> dict[tuple[int, ...], bytes]:
    from zarrlake.model import iter_manifest

    node = root.nodes["a"]
    assert node.manifest is not None
    return {c: r.hash for c, r in iter_manifest(reader.index(node.manifest), reader)}


def test_staged_changes_reproduce_the_source() -> None:
    reader = FakeReader()
    base = start(reader)
    source = build(
        reader,
        base,
        a=chunks(c0=None, c1=ref("s1"), c12=ref("s12", small=True)),
        b=StagedNode(meta=reader.put_meta(group_doc())),
    )
    staged = staged_changes(base, source, reader)
    assert staged.nodes["a"].chunks == {(0,): None, (1,): ref("s1"), (12,): ref("s12", small=True)}
    assert reader.build(base, staged).root == source


def test_disjoint_changes_merge_clean() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c1=ref("t1")))
    source = build(reader, base, a=chunks(c2=ref("s2"), c3=None))
    root, conflicts = merged(reader, base, target, source)
    assert conflicts == []
    got = chunk_hashes(reader, root)
    assert got[(1,)] == ref("t1").hash
    assert got[(2,)] == ref("s2").hash
    assert (3,) not in got
    assert got[(4,)] == ref("base4").hash


def test_same_chunk_on_both_sides_conflicts() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c5=ref("t5")))
    source = build(reader, base, a=chunks(c5=ref("s5")))
    plan = plan_merge(base, target, source, reader, target_id=HEAD)
    assert [(c.kind, c.path, c.chunk, c.commit) for c in plan.conflicts] == [
        ("chunk", "a", (5,), HEAD)
    ]


def test_same_bytes_on_both_sides_is_not_a_conflict() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c5=ref("same"), c6=None))
    source = build(reader, base, a=chunks(c5=ref("same"), c6=None))
    root, conflicts = merged(reader, base, target, source)
    assert conflicts == []
    assert diff_roots(target, root, reader).is_empty()


def test_strategy_ours_keeps_the_target_and_theirs_takes_the_source() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c5=ref("t5"), c1=ref("t1")))
    source = build(reader, base, a=chunks(c5=ref("s5"), c2=ref("s2")))
    ours, _ = merged(reader, base, target, source, "ours")
    theirs, _ = merged(reader, base, target, source, "theirs")
    o, t = chunk_hashes(reader, ours), chunk_hashes(reader, theirs)
    assert o[(5,)] == ref("t5").hash
    assert t[(5,)] == ref("s5").hash
    for got in (o, t):  # the non-conflicting changes of both sides are kept either way
        assert got[(1,)] == ref("t1").hash
        assert got[(2,)] == ref("s2").hash


def test_disjoint_attribute_keys_merge() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(
        reader,
        base,
        a=StagedNode(meta=reader.put_meta(array_doc(shape=(10,), attrs={"k": 0, "t": 1}))),
    )
    source = build(
        reader,
        base,
        a=StagedNode(meta=reader.put_meta(array_doc(shape=(10,), attrs={"k": 0, "s": 2}))),
    )
    root, conflicts = merged(reader, base, target, source)
    assert conflicts == []
    assert reader.node_meta(root.nodes["a"].meta).attributes == {"k": 0, "t": 1, "s": 2}


def test_resize_on_one_side_and_writes_on_the_other_conflict() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c1=ref("t1")))
    source = build(
        reader, base, a=StagedNode(meta=reader.put_meta(array_doc(shape=(5,), attrs={"k": 0})))
    )
    plan = plan_merge(base, target, source, reader, target_id=HEAD)
    assert [(c.kind, c.path) for c in plan.conflicts] == [("metadata", "a")]


def test_delete_on_one_side_and_change_on_the_other_conflict() -> None:
    reader = FakeReader()
    base = start(reader)
    target = build(reader, base, a=chunks(c1=ref("t1")))
    source = build(reader, base, a=StagedNode(dropped=True))
    plan = plan_merge(base, target, source, reader, target_id=HEAD)
    assert [(c.kind, c.path) for c in plan.conflicts] == [("delete", "a")]
    root, _ = merged(reader, base, target, source, "theirs")
    assert "a" not in root.nodes
    root, _ = merged(reader, base, target, source, "ours")
    assert chunk_hashes(reader, root)[(1,)] == ref("t1").hash
