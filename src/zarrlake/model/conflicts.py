"""Conflict detection between a session's changes and commits it did not see, and rebasing.

The rules (see ``docs/concepts.md``):

* the same chunk written on both sides;
* array structure (shape, chunks, dtype, codecs, fill value) changed on one side while chunks
  or metadata changed on the other;
* a node deleted on one side (or an ancestor group deleted) and changed on the other;
* the same new node created on both sides;
* the same attribute keys changed on both sides (disjoint keys merge);
* the same non-Zarr ("raw") key written on both sides;
* with serializable isolation, anything the session read that a later commit wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

from zarrlake.errors import Conflict, ConflictKind, InvalidInputError
from zarrlake.model.changes import ChangeSet, NodeChange, SnapshotReader, StagedNode, StagedState
from zarrlake.model.manifest import content_hash
from zarrlake.model.snapshot import Root
from zarrlake.types import ChunkCoords

__all__ = ["ReadSet", "Solver", "check_solver", "detect_conflicts", "rebase_staged"]

Solver = Literal["fail", "ours", "theirs"]


def check_solver(solver: object) -> Solver:
    """``solver`` if it is one of ``"fail"``, ``"ours"``, ``"theirs"``; refuse anything else."""
    if not isinstance(solver, str) or solver not in get_args(Solver):
        raise InvalidInputError(f"solver must be 'fail', 'ours' or 'theirs', got {solver!r}")
    return solver  # type: ignore[return-value]


ReadSet = frozenset[tuple[str, ChunkCoords | None]]
"""What a serializable session read: (node path, chunk coords) or (node path, None) for metadata."""

_EMPTY = NodeChange()


def _is_under(path: str, ancestor: str) -> bool:
    return ancestor == "" or path.startswith(ancestor + "/")


def _pair_conflicts(path: str, o: NodeChange, t: NodeChange, commit: str) -> list[Conflict]:
    out: list[Conflict] = []
    if o.deleted and t.deleted and not o.created and not t.created:
        return out  # deleted on both sides: the outcome is the same either way
    if (o.deleted and t.touched) or (t.deleted and o.touched):
        side = "this session" if o.deleted else "the other commit"
        out.append(
            Conflict(
                ConflictKind.DELETE, path, None, commit, f"deleted by {side}, changed by the other"
            )
        )
        return out
    if o.created and t.created:
        out.append(Conflict(ConflictKind.CREATE, path, None, commit, "created on both sides"))
        return out
    if (o.structure and (t.chunks or t.meta_changed)) or (
        t.structure and (o.chunks or o.meta_changed)
    ):
        out.append(
            Conflict(
                ConflictKind.METADATA,
                path,
                None,
                commit,
                "array structure (shape, chunks, dtype, codecs or fill value) changed on one side "
                "while the other changed its data or metadata",
            )
        )
    both = o.attrs & t.attrs
    if both:
        out.append(
            Conflict(
                ConflictKind.ATTRIBUTES,
                path,
                None,
                commit,
                f"attribute(s) {sorted(both)} changed on both sides",
            )
        )
    if o.chunks and t.chunks:
        small, large = (
            (o.chunks, t.chunks) if len(o.chunks) <= len(t.chunks) else (t.chunks, o.chunks)
        )
        for coords in sorted(c for c in small if c in large):
            out.append(
                Conflict(ConflictKind.CHUNK, path, coords, commit, "chunk written on both sides")
            )
    return out


def detect_conflicts(
    ours: ChangeSet,
    theirs: Sequence[tuple[str, ChangeSet]],
    reads: ReadSet | None = None,
    raw_reads: frozenset[str] | None = None,
) -> list[Conflict]:
    """Every conflict between ``ours`` and each (commit id, change set) in ``theirs``.

    ``reads`` and ``raw_reads`` are what a serializable session read (node metadata and
    chunks; non-Zarr keys)."""
    conflicts: list[Conflict] = []
    our_deleted = [p for p, c in ours.nodes.items() if c.deleted]
    for commit, cs in theirs:
        for path in set(ours.nodes) | set(cs.nodes):
            o = ours.nodes.get(path, _EMPTY)
            t = cs.nodes.get(path, _EMPTY)
            if o.touched and t.touched:
                conflicts.extend(_pair_conflicts(path, o, t, commit))
        # a deleted group against changes below it, both ways
        their_deleted = [p for p, c in cs.nodes.items() if c.deleted]
        for gone, side, other in (
            (our_deleted, "this session", cs),
            (their_deleted, "the other commit", ours),
        ):
            for d in gone:
                for path, c in other.nodes.items():
                    if path != d and _is_under(path, d) and c.touched and not c.deleted:
                        conflicts.append(
                            Conflict(
                                ConflictKind.DELETE,
                                path,
                                None,
                                commit,
                                f"ancestor {d or '/'} deleted by {side}",
                            )
                        )
        for key in sorted(ours.raw & cs.raw):
            conflicts.append(
                Conflict(ConflictKind.RAW, key, None, commit, "key written on both sides")
            )
        if reads:
            conflicts.extend(_read_conflicts(reads, cs, commit))
        for key in sorted((raw_reads or frozenset()) & cs.raw):
            conflicts.append(
                Conflict(
                    ConflictKind.READ, key, None, commit, "key read by this session was changed"
                )
            )
    return conflicts


def _read_conflicts(reads: ReadSet, cs: ChangeSet, commit: str) -> Iterable[Conflict]:
    for path, what in sorted(reads, key=lambda r: (r[0], r[1] or ())):
        c = cs.nodes.get(path)
        if c is None or not c.touched:
            continue
        whole = c.deleted or c.created or c.structure
        if what is None and (whole or c.meta_changed):
            yield Conflict(
                ConflictKind.READ, path, None, commit, "metadata read by this session was changed"
            )
        elif what is not None and (whole or what in c.chunks):
            yield Conflict(
                ConflictKind.READ, path, what, commit, "chunk read by this session was changed"
            )


def rebase_staged(
    staged: StagedState,
    orig_base: Root,
    head: Root,
    conflicts: Sequence[Conflict],
    solver: Solver,
    reader: SnapshotReader,
) -> tuple[StagedState, dict[bytes, tuple[str, bytes]]]:
    """Re-express staged changes on top of ``head``.

    With ``theirs``, staged changes that conflict are dropped; with ``ours`` they are kept and
    win. Metadata documents changed on both sides are merged attribute by attribute (the
    solver decides overlapping keys). Returns the new staged state and any merged metadata
    documents to store.
    """
    new_blobs: dict[bytes, tuple[str, bytes]] = {}
    conflicted = {c.path for c in conflicts}
    out = StagedState(
        {p: _copy(sn, expand=p in conflicted) for p, sn in staged.nodes.items()},
        dict(staged.raw),
    )
    if solver == "theirs":
        for c in conflicts:
            if c.kind == "read":
                continue
            if c.kind == "raw":
                out.raw.pop(c.path, None)
                continue
            sn = out.nodes.get(c.path)
            if sn is None:
                continue
            if c.kind == "chunk" and c.chunk is not None:
                sn.chunks.pop(c.chunk, None)
            elif c.kind == "attributes":
                pass  # handled by the attribute merge below: their values win
            else:
                out.nodes.pop(c.path, None)
        # Their changes below a group we deleted win: keep the group (and its ancestors).
        for c in conflicts:
            if c.kind != "delete":
                continue
            for path in list(out.nodes):
                if path != c.path and _is_under(c.path, path) and out.nodes[path].dropped:
                    del out.nodes[path]
    if solver == "ours":
        _restore_ancestors(out, orig_base, head)
    for path, sn in out.nodes.items():
        base_node = orig_base.nodes.get(path)
        head_node = head.nodes.get(path)
        if sn.dropped or sn.meta is None:
            if (
                solver == "ours"
                and not sn.dropped
                and head_node is None
                and base_node is not None
                and (sn.chunks or sn.batches)
            ):
                # they deleted the node we wrote chunks into: ours wins, bring it back
                sn.meta = base_node.meta
            continue
        if base_node is None or head_node is None or base_node.meta == head_node.meta:
            continue
        if sn.meta == head_node.meta:
            continue
        merged = _merge_attributes(reader, base_node.meta, sn.meta, head_node.meta, solver)
        if merged is not None:
            h = content_hash(merged)
            new_blobs[h] = ("meta", merged)
            sn.meta = h
    return out, new_blobs


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return [""] + ["/".join(parts[:i]) for i in range(1, len(parts))] if path else []


def _restore_ancestors(staged: StagedState, orig_base: Root, head: Root) -> None:
    """Our changes win over their deletion: bring back the groups our nodes live in."""
    for path, sn in list(staged.nodes.items()):
        if sn.dropped and sn.meta is None:
            continue
        for anc in _ancestors(path):
            if anc in head.nodes or anc not in orig_base.nodes:
                continue
            existing = staged.nodes.get(anc)
            if existing is not None and (existing.meta is not None or existing.dropped):
                continue
            staged.nodes[anc] = StagedNode(meta=orig_base.nodes[anc].meta)


def _merge_attributes(
    reader: SnapshotReader, base: bytes, ours: bytes, theirs: bytes, solver: Solver
) -> bytes | None:
    b, o, t = reader.node_meta(base), reader.node_meta(ours), reader.node_meta(theirs)
    if "unknown" in (b.node_type, o.node_type, t.node_type):
        return None
    our_structure_changed = b.structure != o.structure
    doc: dict[str, Any] = dict(o.structure if our_structure_changed else t.structure)
    attrs = dict(t.attributes)
    their_keys = {
        k
        for k in set(b.attributes) | set(t.attributes)
        if b.attributes.get(k, _MISSING) != t.attributes.get(k, _MISSING)
    }
    for key in set(b.attributes) | set(o.attributes):
        before, after = b.attributes.get(key, _MISSING), o.attributes.get(key, _MISSING)
        if before == after:
            continue
        if key in their_keys and solver != "ours":
            continue
        if after is _MISSING:
            attrs.pop(key, None)
        else:
            attrs[key] = after
    doc["attributes"] = attrs
    return json.dumps(doc, indent=2).encode()


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _copy(sn: StagedNode, *, expand: bool) -> StagedNode:
    """A copy of ``sn`` to rebase; its batches expanded into chunks where conflicts may
    remove some of them."""
    if expand and sn.batches:
        return StagedNode(sn.dropped, sn.meta, sn.all_chunks())
    return StagedNode(sn.dropped, sn.meta, dict(sn.chunks), sn.batches, sn.batch_shape)
