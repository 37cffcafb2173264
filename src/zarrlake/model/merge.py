"""Three-way merges of snapshots, at chunk level.

A merge of ``source`` into ``target`` with common ancestor ``base`` is expressed with the
machinery sessions already use: the source's changes since the base become a staged state
(what a session would have staged), and that state is rebased onto the target, with conflict
detection and solvers exactly as for a commit. A revert is the same operation with the
reverted commit as the base and its parent as the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from zarrlake.errors import Conflict
from zarrlake.model.changes import (
    ChangeSet,
    NodeChange,
    SnapshotReader,
    StagedNode,
    StagedState,
    changes_from_staged,
    iter_manifest,
)
from zarrlake.model.chunkdiff import manifest_delta
from zarrlake.model.conflicts import Solver, detect_conflicts, rebase_staged
from zarrlake.model.diff import Diff, diff_roots
from zarrlake.model.manifest import ChunkRef, same_content, split_coords
from zarrlake.model.snapshot import NodeEntry, Root
from zarrlake.types import ChunkCoords

__all__ = [
    "MergePlan",
    "changeset_from_diff",
    "plan_merge",
    "staged_changes",
]

"""``ours``: the target branch keeps its version of conflicting changes; ``theirs``: the
source's version wins (as ``git merge -X ours|theirs``)."""

# In a merge the staged state holds the *source's* changes, so the merge solver maps to
# the opposite session solver ("ours" for a session means its staged changes win).
_SOLVER: dict[str, Solver] = {"fail": "fail", "ours": "theirs", "theirs": "ours"}


@dataclass(frozen=True, slots=True)
class MergePlan:
    """The outcome of planning a merge: what to apply to the target, and the conflicts."""

    staged: StagedState
    blobs: dict[bytes, tuple[str, bytes]]  # merged metadata documents to store
    conflicts: list[Conflict]


def _node_chunks(
    sn: StagedNode, before: NodeEntry | None, after: NodeEntry, reader: SnapshotReader
) -> None:
    ia = reader.index(before.manifest) if before is not None and before.manifest else None
    ib = reader.index(after.manifest) if after.manifest else None
    if ia is not None and ib is not None and ia.shard_shape != ib.shard_shape:
        # the array was replaced with another shard layout: restate every chunk
        old = {c for c, _ in iter_manifest(ia, reader)}
        new = dict(iter_manifest(ib, reader))
        sn.chunks.update(dict.fromkeys(old - set(new)))
        sn.chunks.update(new)
        return
    for d in manifest_delta(ia, ib, reader):
        sn.chunks.update(d.refs(d.added))
        sn.chunks.update(d.refs(d.changed))
        for c in d.coords(d.before, d.removed).tolist():
            sn.chunks[tuple(c)] = None


def staged_changes(base: Root, source: Root, reader: SnapshotReader) -> StagedState:
    """The changes that turn ``base`` into ``source``, as a session would have staged them.

    Unchanged nodes and shards are skipped. A node whose type or rank changed is staged as
    dropped and recreated.
    """
    state = StagedState()
    for path in sorted(set(base.nodes) | set(source.nodes)):
        nb, ns = base.nodes.get(path), source.nodes.get(path)
        if nb == ns:
            continue
        if ns is None:
            state.nodes[path] = StagedNode(dropped=True)
            continue
        ms = reader.node_meta(ns.meta)
        mb = reader.node_meta(nb.meta) if nb is not None else None
        replaced = mb is not None and (mb.node_type != ms.node_type or mb.ndim != ms.ndim)
        sn = StagedNode(dropped=replaced)
        if nb is None or replaced or nb.meta != ns.meta:
            sn.meta = ns.meta
        if ms.is_array:
            _node_chunks(sn, None if replaced or mb is None or not mb.is_array else nb, ns, reader)
        if sn.dropped or sn.meta is not None or sn.chunks:
            state.nodes[path] = sn
    for key in set(base.raw) | set(source.raw):
        a, b = base.raw.get(key), source.raw.get(key)
        if a is None or b is None or a.hash != b.hash:
            state.raw[key] = b
    return state


def changeset_from_diff(diff: Diff) -> ChangeSet:
    """The :class:`ChangeSet` (as used for conflict detection) equivalent to a diff."""
    nodes = {
        n.path: NodeChange(
            created=n.status == "added",
            deleted=n.status == "removed",
            structure=bool(n.metadata),
            attrs=frozenset(c.field for c in n.attributes),
            chunks=n.chunks_added | n.chunks_changed | n.chunks_removed,
            node_type=n.node_type,
        )
        for n in diff.nodes
    }
    return ChangeSet(nodes, diff.keys_added | diff.keys_changed | diff.keys_removed)


def chunk_ref(
    root: Root, path: str, coords: ChunkCoords, reader: SnapshotReader
) -> ChunkRef | None:
    """The ref of one chunk in a snapshot (loads the index nodes on its path and one shard)."""
    node = root.nodes.get(path)
    if node is None or node.manifest is None:
        return None
    index = reader.index(node.manifest)
    if len(coords) != len(index.shard_shape):
        return None
    pos, flat = split_coords(coords, index.shard_shape)
    h = index.shard_at(pos, reader)
    return None if h is None else reader.shard(h).get(flat)


def _same_result(c: Conflict, target: Root, source: Root, reader: SnapshotReader) -> bool:
    """Both sides wrote the same bytes (or both deleted) a chunk: nothing to decide."""
    if c.kind != "chunk" or c.chunk is None:
        return False
    a = chunk_ref(target, c.path, c.chunk, reader)
    b = chunk_ref(source, c.path, c.chunk, reader)
    return same_content(a, b)


def plan_merge(
    base: Root,
    target: Root,
    source: Root,
    reader: SnapshotReader,
    *,
    target_id: str,
    solver: Solver = "fail",
) -> MergePlan:
    """Plan a three-way merge of ``source`` into ``target`` with common ancestor ``base``.

    Conflicts follow the commit rules (see :mod:`zarrlake.model.conflicts`), except that a
    chunk both sides changed to the same bytes is not a conflict. With ``solver="fail"``
    and conflicts, the plan's staged state is the unresolved one and must not be applied.
    """
    staged = staged_changes(base, source, reader)
    ours = changes_from_staged(base, staged, reader)
    theirs = changeset_from_diff(diff_roots(base, target, reader))
    conflicts = [
        c
        for c in detect_conflicts(ours, [(target_id, theirs)])
        if not _same_result(c, target, source, reader)
    ]
    if conflicts and solver == "fail":
        return MergePlan(staged, {}, conflicts)
    new, blobs = rebase_staged(staged, base, target, conflicts, _SOLVER[solver], reader)
    return MergePlan(new, blobs, conflicts)
