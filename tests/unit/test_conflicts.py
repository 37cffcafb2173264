"""Conflict detection (every rule of model/conflicts.py) and rebasing staged changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.fakes import FakeReader, array_doc, group_doc, ref
from zarrlake.errors import Conflict
from zarrlake.model import (
    ChangeSet,
    NodeChange,
    Root,
    StagedNode,
    StagedState,
    changes_from_staged,
    detect_conflicts,
    rebase_staged,
)
from zarrlake.model.conflicts import Solver

C = "c0ffee"
ARRAY = "array"


def cs(raw: frozenset[str] = frozenset(), **nodes: NodeChange) -> ChangeSet:
    return ChangeSet({k.replace("__", "/"): v for k, v in nodes.items()}, raw)


def chunks(*coords: tuple[int, ...]) -> frozenset[tuple[int, ...]]:
    return frozenset(coords)


def kinds(conflicts: list[Conflict]) -> list[tuple[str, str, tuple[int, ...] | None]]:
    return sorted(
        ((c.kind, c.path, c.chunk) for c in conflicts),
        key=lambda k: (k[0], k[1], k[2] is not None, k[2] or ()),
    )


def one(ours: ChangeSet, theirs: ChangeSet, reads: Any = None) -> list[Conflict]:
    return detect_conflicts(ours, [(C, theirs)], reads)


# -- no conflict --------------------------------------------------------------------------------


def test_nothing_on_either_side() -> None:
    assert one(ChangeSet(), ChangeSet()) == []
    assert detect_conflicts(cs(a=NodeChange(chunks=chunks((0,)))), []) == []


def test_different_nodes_do_not_conflict() -> None:
    ours = cs(a=NodeChange(chunks=chunks((0,))), b=NodeChange(structure=True))
    theirs = cs(c=NodeChange(chunks=chunks((0,))), d=NodeChange(deleted=True))
    assert one(ours, theirs) == []


def test_different_chunks_of_one_array_do_not_conflict() -> None:
    assert (
        one(cs(a=NodeChange(chunks=chunks((0,), (1,)))), cs(a=NodeChange(chunks=chunks((2,)))))
        == []
    )


def test_chunks_vs_attributes_do_not_conflict() -> None:
    assert (
        one(cs(a=NodeChange(chunks=chunks((0,)))), cs(a=NodeChange(attrs=frozenset({"x"})))) == []
    )


def test_untouched_entries_are_ignored() -> None:
    assert one(cs(a=NodeChange()), cs(a=NodeChange(deleted=True))) == []


# -- same chunk on both sides -------------------------------------------------------------------


def test_same_chunk_both_sides() -> None:
    ours = cs(a=NodeChange(chunks=chunks((0, 0), (1, 1), (2, 2))))
    theirs = cs(a=NodeChange(chunks=chunks((1, 1), (2, 2), (3, 3))))
    found = one(ours, theirs)
    assert kinds(found) == [("chunk", "a", (1, 1)), ("chunk", "a", (2, 2))]
    assert all(c.commit == C for c in found)


def test_same_chunk_0d() -> None:
    assert kinds(one(cs(s=NodeChange(chunks=chunks(()))), cs(s=NodeChange(chunks=chunks(()))))) == [
        ("chunk", "s", ())
    ]


# -- structure vs chunks / metadata ------------------------------------------------------------


@pytest.mark.parametrize(
    "other",
    [
        NodeChange(chunks=chunks((0,))),
        NodeChange(structure=True),
        NodeChange(attrs=frozenset({"units"})),
    ],
    ids=["chunks", "structure", "attributes"],
)
@pytest.mark.parametrize("we_resize", [True, False], ids=["ours-resized", "theirs-resized"])
def test_structure_vs_data_or_metadata(other: NodeChange, we_resize: bool) -> None:
    resize = NodeChange(structure=True)
    ours, theirs = (resize, other) if we_resize else (other, resize)
    assert kinds(one(cs(a=ours), cs(a=theirs))) == [("metadata", "a", None)]


# -- delete vs change ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        NodeChange(chunks=chunks((0,))),
        NodeChange(attrs=frozenset({"x"})),
        NodeChange(structure=True),
        NodeChange(created=True, deleted=True),
    ],
    ids=["chunks", "attrs", "structure", "replaced"],
)
@pytest.mark.parametrize("we_delete", [True, False], ids=["ours-deleted", "theirs-deleted"])
def test_delete_vs_change(change: NodeChange, we_delete: bool) -> None:
    gone = NodeChange(deleted=True)
    ours, theirs = (gone, change) if we_delete else (change, gone)
    found = one(cs(a=ours), cs(a=theirs))
    assert kinds(found) == [("delete", "a", None)]
    if not change.deleted:
        assert ("this session" in found[0].detail) == we_delete


def test_delete_on_both_sides_is_not_a_conflict() -> None:
    assert one(cs(a=NodeChange(deleted=True)), cs(a=NodeChange(deleted=True))) == []


@pytest.mark.parametrize("we_delete", [True, False], ids=["ours-deleted", "theirs-deleted"])
def test_ancestor_group_deleted_vs_change_below(we_delete: bool) -> None:
    gone = cs(g=NodeChange(deleted=True))
    changed = cs(g__sub__a=NodeChange(chunks=chunks((0,))))
    ours, theirs = (gone, changed) if we_delete else (changed, gone)
    found = one(ours, theirs)
    assert kinds(found) == [("delete", "g/sub/a", None)]
    assert "ancestor g deleted" in found[0].detail


def test_root_group_deleted_vs_any_change() -> None:
    found = one(cs(**{"": NodeChange(deleted=True)}), cs(x=NodeChange(attrs=frozenset({"k"}))))
    assert kinds(found) == [("delete", "x", None)]


def test_sibling_with_common_prefix_is_not_below() -> None:
    assert one(cs(g=NodeChange(deleted=True)), cs(g2=NodeChange(chunks=chunks((0,))))) == []


def test_deleted_descendant_under_deleted_group_is_not_a_conflict() -> None:
    assert one(cs(g=NodeChange(deleted=True)), cs(g__a=NodeChange(deleted=True))) == []


# -- created on both sides ----------------------------------------------------------------------


def test_create_both_sides() -> None:
    found = one(cs(n=NodeChange(created=True)), cs(n=NodeChange(created=True, chunks=chunks((0,)))))
    assert kinds(found) == [("create", "n", None)]


def test_create_on_one_side_only() -> None:
    assert one(cs(n=NodeChange(created=True)), cs(m=NodeChange(created=True))) == []


# -- attributes ---------------------------------------------------------------------------------


def test_overlapping_attributes_conflict() -> None:
    found = one(
        cs(a=NodeChange(attrs=frozenset({"x", "y"}))), cs(a=NodeChange(attrs=frozenset({"y", "z"})))
    )
    assert kinds(found) == [("attributes", "a", None)]
    assert "['y']" in found[0].detail


def test_disjoint_attributes_merge() -> None:
    assert (
        one(cs(a=NodeChange(attrs=frozenset({"x"}))), cs(a=NodeChange(attrs=frozenset({"z"}))))
        == []
    )


# -- raw keys -----------------------------------------------------------------------------------


def test_raw_keys_both_sides() -> None:
    ours = cs(raw=frozenset({"k1", "k2"}))
    theirs = cs(raw=frozenset({"k2", "k3"}))
    assert kinds(one(ours, theirs)) == [("raw", "k2", None)]


# -- read set (serializable) --------------------------------------------------------------------


def test_read_chunk_written_by_them() -> None:
    reads = frozenset({("a", (0,)), ("a", (5,))})
    found = one(ChangeSet(), cs(a=NodeChange(chunks=chunks((0,), (1,)))), reads)
    assert kinds(found) == [("read", "a", (0,))]


def test_read_metadata_changed_by_them() -> None:
    reads = frozenset({("a", None)})
    assert kinds(one(ChangeSet(), cs(a=NodeChange(attrs=frozenset({"x"}))), reads)) == [
        ("read", "a", None)
    ]


def test_read_metadata_not_affected_by_chunk_writes() -> None:
    reads = frozenset({("a", None)})
    assert one(ChangeSet(), cs(a=NodeChange(chunks=chunks((0,)))), reads) == []


@pytest.mark.parametrize(
    "whole",
    [NodeChange(deleted=True), NodeChange(created=True), NodeChange(structure=True)],
    ids=["deleted", "created", "structure"],
)
def test_read_chunk_of_node_replaced_or_resized(whole: NodeChange) -> None:
    reads = frozenset({("a", (7,)), ("a", None)})
    assert kinds(one(ChangeSet(), cs(a=whole), reads)) == [("read", "a", None), ("read", "a", (7,))]


def test_reads_ignored_without_read_set() -> None:
    assert one(ChangeSet(), cs(a=NodeChange(chunks=chunks((0,)))), None) == []


def test_read_raw_key_written_by_them() -> None:
    found = detect_conflicts(
        ChangeSet(),
        [("c1", cs(raw=frozenset({"extra/key"})))],
        frozenset(),
        frozenset({"extra/key"}),
    )
    assert [(c.kind, c.path, c.chunk) for c in found] == [("read", "extra/key", None)]


# -- several commits ----------------------------------------------------------------------------


def test_each_other_commit_is_checked_and_named() -> None:
    ours = cs(a=NodeChange(chunks=chunks((0,), (1,))))
    theirs = [
        ("c1", cs(a=NodeChange(chunks=chunks((0,))))),
        ("c2", cs(b=NodeChange(chunks=chunks((0,))))),
        ("c3", cs(a=NodeChange(chunks=chunks((1,))))),
    ]
    found = detect_conflicts(ours, theirs)
    assert sorted((c.commit, c.chunk) for c in found) == [("c1", (0,)), ("c3", (1,))]


# -- rebase_staged --------------------------------------------------------------------------------


def meta_doc(reader: FakeReader, h: bytes | None) -> dict[str, Any]:
    assert h is not None
    return json.loads(reader.meta_bytes(h))  # type: ignore[no-any-return]


class World:
    """A base commit, a head commit built on it by 'them', and a session's staged changes."""

    def __init__(self) -> None:
        self.reader = FakeReader()
        r = self.reader
        self.base = r.build(
            Root(),
            StagedState(
                {
                    "": StagedNode(meta=r.put_meta(group_doc())),
                    "g": StagedNode(meta=r.put_meta(group_doc())),
                    "g/a": StagedNode(
                        meta=r.put_meta(array_doc((4,), (1,), {"keep": 0, "x": 0, "y": 0})),
                        chunks={(0,): ref(0), (1,): ref(1)},
                    ),
                    "b": StagedNode(
                        meta=r.put_meta(array_doc((4,), (1,))), chunks={(0,): ref("b")}
                    ),
                },
                {"raw": ref("raw")},
            ),
        ).root
        self.head = self.base

    def theirs(self, state: StagedState) -> ChangeSet:
        result = self.reader.build(self.base, state)
        self.head = result.root
        return result.changes

    def rebase(self, ours: StagedState, theirs: ChangeSet, solver: Solver) -> StagedState:
        mine = changes_from_staged(self.base, ours, self.reader)
        conflicts = detect_conflicts(mine, [(C, theirs)])
        if solver == "fail":
            assert conflicts == []
        new, blobs = rebase_staged(ours, self.base, self.head, conflicts, solver, self.reader)
        self.reader.add(blobs)
        return new

    def attrs_meta(self, **attrs: Any) -> bytes:
        return self.reader.put_meta(array_doc((4,), (1,), attrs))


@pytest.fixture
def world() -> World:
    return World()


def test_rebase_does_not_mutate_input(world: World) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(chunks={(0,): ref("t")})}))
    ours = StagedState({"g/a": StagedNode(chunks={(0,): ref("o")})}, {"raw": ref("o")})
    world.rebase(ours, theirs, "theirs")
    assert ours.nodes["g/a"].chunks == {(0,): ref("o")}
    assert ours.raw == {"raw": ref("o")}


def test_rebase_without_conflicts_keeps_everything(world: World) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(chunks={(0,): ref("t")})}))
    ours = StagedState({"g/a": StagedNode(chunks={(1,): ref("o")})}, {"new": ref("n")})
    new = world.rebase(ours, theirs, "fail")
    assert new.nodes["g/a"].chunks == {(1,): ref("o")}
    assert new.raw == {"new": ref("n")}


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_chunk_conflict_solvers(world: World, solver: Solver) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(chunks={(0,): ref("t")})}))
    ours = StagedState({"g/a": StagedNode(chunks={(0,): ref("o"), (2,): ref("o2")})})
    new = world.rebase(ours, theirs, solver)
    if solver == "ours":
        assert new.nodes["g/a"].chunks == {(0,): ref("o"), (2,): ref("o2")}
    else:
        # only the conflicting chunk is given up
        assert new.nodes["g/a"].chunks == {(2,): ref("o2")}


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_raw_conflict_solvers(world: World, solver: Solver) -> None:
    theirs = world.theirs(StagedState(raw={"raw": ref("t"), "t-only": ref("t")}))
    ours = StagedState(raw={"raw": ref("o"), "o-only": ref("o")})
    new = world.rebase(ours, theirs, solver)
    expected = {"raw": ref("o"), "o-only": ref("o")} if solver == "ours" else {"o-only": ref("o")}
    assert new.raw == expected


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_structure_conflict_solvers(world: World, solver: Solver) -> None:
    resized = world.reader.put_meta(array_doc((8,), (1,), {"keep": 0, "x": 0, "y": 0}))
    theirs = world.theirs(StagedState({"g/a": StagedNode(meta=resized)}))
    ours = StagedState({"g/a": StagedNode(chunks={(3,): ref("o")})})
    new = world.rebase(ours, theirs, solver)
    if solver == "ours":
        assert new.nodes["g/a"].chunks == {(3,): ref("o")}
    else:
        assert "g/a" not in new.nodes


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_they_deleted_we_wrote_chunks(world: World, solver: Solver) -> None:
    theirs = world.theirs(StagedState({"b": StagedNode(dropped=True)}))
    ours = StagedState({"b": StagedNode(chunks={(1,): ref("o")})})
    new = world.rebase(ours, theirs, solver)
    if solver == "ours":
        # ours wins: the node comes back with its base metadata and our chunk
        assert new.nodes["b"].meta == world.base.nodes["b"].meta
        assert new.nodes["b"].chunks == {(1,): ref("o")}
        result = world.reader.build(world.head, new)
        assert "b" in result.root.nodes
    else:
        assert "b" not in new.nodes
        assert "b" not in world.reader.build(world.head, new).root.nodes


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_we_deleted_they_wrote_chunks(world: World, solver: Solver) -> None:
    theirs = world.theirs(StagedState({"b": StagedNode(chunks={(2,): ref("t")})}))
    ours = StagedState({"b": StagedNode(dropped=True)})
    new = world.rebase(ours, theirs, solver)
    after = world.reader.build(world.head, new).root
    assert ("b" in after.nodes) == (solver == "theirs")


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_create_conflict_solvers(world: World, solver: Solver) -> None:
    theirs_meta = world.reader.put_meta(array_doc((2,), (1,), {"who": "them"}))
    our_meta = world.reader.put_meta(array_doc((2,), (1,), {"who": "us"}))
    theirs = world.theirs(StagedState({"n": StagedNode(meta=theirs_meta)}))
    ours = StagedState({"n": StagedNode(meta=our_meta, chunks={(0,): ref("o")})})
    new = world.rebase(ours, theirs, solver)
    after = world.reader.build(world.head, new).root
    expected = our_meta if solver == "ours" else theirs_meta
    assert after.nodes["n"].meta == expected


def test_theirs_keeps_group_they_added_to(world: World) -> None:
    new_meta = world.reader.put_meta(array_doc((2,), (1,)))
    theirs = world.theirs(StagedState({"g/new": StagedNode(meta=new_meta)}))
    ours = StagedState({"g": StagedNode(dropped=True), "g/a": StagedNode(dropped=True)})
    new = world.rebase(ours, theirs, "theirs")
    after = world.reader.build(world.head, new).root
    assert "g/new" in after.nodes
    assert "g" in after.nodes  # their child keeps its parent


def test_ours_restores_parent_of_node_it_brings_back(world: World) -> None:
    theirs = world.theirs(
        StagedState({"g": StagedNode(dropped=True), "g/a": StagedNode(dropped=True)})
    )
    ours = StagedState({"g/a": StagedNode(chunks={(3,): ref("o")})})
    new = world.rebase(ours, theirs, "ours")
    after = world.reader.build(world.head, new).root
    assert "g/a" in after.nodes
    assert "g" in after.nodes


# -- attribute three-way merge --------------------------------------------------------------------


def test_disjoint_attribute_changes_merge(world: World) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=1, y=0))}))
    ours = StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=0, y=2, z=3))})
    new = world.rebase(ours, theirs, "fail")
    doc = meta_doc(world.reader, new.nodes["g/a"].meta)
    assert doc["attributes"] == {"keep": 0, "x": 1, "y": 2, "z": 3}
    assert doc["shape"] == [4]
    assert doc["node_type"] == "array"


def test_attribute_removal_merges(world: World) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=1, y=0))}))
    ours = StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=0))})  # y removed
    new = world.rebase(ours, theirs, "fail")
    assert meta_doc(world.reader, new.nodes["g/a"].meta)["attributes"] == {"keep": 0, "x": 1}


@pytest.mark.parametrize("solver", ["ours", "theirs"])
def test_overlapping_attribute_changes(world: World, solver: Solver) -> None:
    theirs = world.theirs(
        StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x="them", y=0, t=1))})
    )
    ours = StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x="us", y=5))})
    new = world.rebase(ours, theirs, solver)
    attrs = meta_doc(world.reader, new.nodes["g/a"].meta)["attributes"]
    winner = "us" if solver == "ours" else "them"
    assert attrs == {"keep": 0, "x": winner, "y": 5, "t": 1}


def test_merged_document_is_stored_and_parses(world: World) -> None:
    world.theirs(StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=1, y=0))}))
    ours = StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=0, y=2))})
    mine = changes_from_staged(world.base, ours, world.reader)
    new, blobs = rebase_staged(ours, world.base, world.head, [], "fail", world.reader)
    h = new.nodes["g/a"].meta
    assert h in blobs
    assert blobs[h][0] == "meta"
    assert mine.nodes["g/a"].attrs == frozenset({"y"})
    world.reader.add(blobs)
    assert world.reader.node_meta(h or b"").is_array


def test_our_structure_change_wins_with_ours_and_keeps_their_attributes(world: World) -> None:
    theirs = world.theirs(StagedState({"g/a": StagedNode(meta=world.attrs_meta(keep=0, x=9, y=0))}))
    resized = world.reader.put_meta(array_doc((16,), (1,), {"keep": 0, "x": 0, "y": 0}))
    ours = StagedState({"g/a": StagedNode(meta=resized)})
    new = world.rebase(ours, theirs, "ours")
    doc = meta_doc(world.reader, new.nodes["g/a"].meta)
    assert doc["shape"] == [16]
    assert doc["attributes"] == {"keep": 0, "x": 9, "y": 0}


def test_same_metadata_on_both_sides_needs_no_merge(world: World) -> None:
    same = world.attrs_meta(keep=0, x=1, y=0)
    theirs = world.theirs(StagedState({"g/a": StagedNode(meta=same)}))
    ours = StagedState({"g/a": StagedNode(meta=same)})
    mine = changes_from_staged(world.base, ours, world.reader)
    conflicts = detect_conflicts(mine, [(C, theirs)])
    new, blobs = rebase_staged(ours, world.base, world.head, conflicts, "ours", world.reader)
    assert new.nodes["g/a"].meta == same
    assert blobs == {}
