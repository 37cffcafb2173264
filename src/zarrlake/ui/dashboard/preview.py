"""Merge preview: the conflicts a three-way merge would raise, from two public diffs.

zarrlake has no public dry-run merge, so the preview diffs the common ancestor against each
side (``repo.diff``) and applies the conflict rules of ``docs/concepts.md`` to the two diffs:
the same chunk written on both sides, structure changed on one side while the other changed
the array, a node deleted on one side and changed on the other (or under a deleted group), the
same node created on both sides, the same attribute keys changed on both sides, the same
non-Zarr key written on both sides. ``repo.merge`` stays the judge when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from zarrlake import Diff, NodeDiff, Repo
from zarrlake.ui.dashboard.graph import Graph, merge_base

__all__ = ["MergePreview", "PreviewConflict", "find_conflicts", "preview_merge"]

STRUCTURE = frozenset({"shape", "chunks", "dtype", "codecs", "fill_value", "node_type"})
Outcome = Literal["up to date", "fast-forward", "merge", "unrelated"]


@dataclass(frozen=True)
class PreviewConflict:
    kind: str
    path: str
    coords: tuple[int, ...] | None
    detail: str


@dataclass(frozen=True)
class MergePreview:
    source: str
    into: str
    base: str | None
    outcome: Outcome
    ours: Diff | None = None  # base -> into
    theirs: Diff | None = None  # base -> source
    conflicts: list[PreviewConflict] = field(default_factory=list)


def _touched(n: NodeDiff) -> bool:
    return True  # a node in a diff changed in some way


def _structure(n: NodeDiff) -> bool:
    return any(f.field in STRUCTURE for f in n.metadata)


def _chunks(n: NodeDiff) -> frozenset[tuple[int, ...]]:
    return n.chunks_added | n.chunks_changed | n.chunks_removed


def _under(path: str, group: str) -> bool:
    return group == "" or path.startswith(group + "/")


def _pair(path: str, o: NodeDiff, t: NodeDiff) -> list[PreviewConflict]:
    if o.status == "removed" and t.status == "removed":
        return []
    if "removed" in (o.status, t.status):
        side = "the target" if o.status == "removed" else "the source"
        return [PreviewConflict("delete", path, None, f"deleted on {side}, changed on the other")]
    if o.status == "added" and t.status == "added":
        return [PreviewConflict("create", path, None, "created on both sides")]
    out: list[PreviewConflict] = []
    if (_structure(o) and (t.n_chunks or t.metadata or t.attributes)) or (
        _structure(t) and (o.n_chunks or o.metadata or o.attributes)
    ):
        out.append(
            PreviewConflict(
                "metadata",
                path,
                None,
                "array structure changed on one side while the other changed the array",
            )
        )
    both = {f.field for f in o.attributes} & {f.field for f in t.attributes}
    if both:
        out.append(
            PreviewConflict("attributes", path, None, f"attribute(s) {sorted(both)} on both sides")
        )
    for coords in sorted(_chunks(o) & _chunks(t)):
        out.append(PreviewConflict("chunk", path, coords, "chunk written on both sides"))
    return out


def find_conflicts(ours: Diff, theirs: Diff) -> list[PreviewConflict]:
    """The conflicts between two sets of changes made since the same ancestor."""
    out: list[PreviewConflict] = []
    o_by = {n.path: n for n in ours}
    t_by = {n.path: n for n in theirs}
    for path in sorted(set(o_by) & set(t_by)):
        if _touched(o_by[path]) and _touched(t_by[path]):
            out.extend(_pair(path, o_by[path], t_by[path]))
    for gone_side, other, side in ((o_by, t_by, "the target"), (t_by, o_by, "the source")):
        for d, n in gone_side.items():
            if n.status != "removed" or n.node_type != "group":
                continue
            for path, c in other.items():
                if path != d and _under(path, d) and c.status != "removed":
                    out.append(
                        PreviewConflict("delete", path, None, f"group /{d} deleted on {side}")
                    )
    o_keys = ours.keys_added | ours.keys_changed | ours.keys_removed
    t_keys = theirs.keys_added | theirs.keys_changed | theirs.keys_removed
    for key in sorted(o_keys & t_keys):
        out.append(PreviewConflict("raw", key, None, "non-Zarr key written on both sides"))
    return out


def preview_merge(repo: Repo, graph: Graph, source: str, into: str) -> MergePreview:
    """What merging ref ``source`` into branch ``into`` would do now."""
    src, head = repo.resolve(source), repo.resolve(into)
    base = merge_base(graph, head, src)
    if base is None:
        return MergePreview(source, into, None, "unrelated")
    if base == src:
        return MergePreview(source, into, base, "up to date")
    if base == head:
        return MergePreview(source, into, base, "fast-forward", theirs=repo.diff(base, src))
    ours, theirs = repo.diff(base, head), repo.diff(base, src)
    return MergePreview(source, into, base, "merge", ours, theirs, find_conflicts(ours, theirs))
