"""What changed between two snapshots: nodes, metadata fields, chunk coordinates.

A diff compares two :class:`Root` values through a :class:`SnapshotReader`. Nodes whose
metadata and manifest hashes are equal are skipped without loading anything; inside an array,
shards whose hashes are equal are skipped too, so the cost follows the size of the change, not
the size of the arrays or the length of the history. A commit against its first parent (either
way round) needs no manifest at all: its change set says how each chunk changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from zarrlake.model.changes import (
    ADDED,
    CHANGED,
    REMOVED,
    VIRTUAL_AFTER,
    VIRTUAL_BEFORE,
    ChangeSet,
    SnapshotReader,
    iter_manifest,
)
from zarrlake.model.index import ManifestIndex, index_delta
from zarrlake.model.manifest import VIRTUAL, ChunkRef, Shard
from zarrlake.model.metadata import ArrayLayout, NodeMeta
from zarrlake.model.snapshot import NodeEntry, Root
from zarrlake.types import ChunkCoords

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

__all__ = [
    "ABSENT",
    "Diff",
    "DiffSummary",
    "FieldChange",
    "NodeDiff",
    "ShardDelta",
    "diff_roots",
    "manifest_delta",
]

NodeStatus = Literal["added", "removed", "modified"]


class _Absent:
    """The value of a field or attribute on the side where it does not exist."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()
"""Marks a metadata field or attribute that does not exist on one side of a diff."""

# Zarr v3 metadata keys, shown under the names users know from zarr/numpy.
_FIELD_NAMES = {
    "data_type": "dtype",
    "chunk_grid": "chunks",
}
_FIELD_ORDER = [
    "node_type",
    "shape",
    "chunks",
    "dtype",
    "fill_value",
    "codecs",
    "chunk_key_encoding",
    "dimension_names",
    "storage_transformers",
]


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One metadata field (or attribute) whose value differs; :data:`ABSENT` on a missing side."""

    field: str
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.field}: {_short(self.before)} -> {_short(self.after)}"


@dataclass(frozen=True, slots=True)
class NodeDiff:
    """How one group or array differs between the two sides.

    Attributes
    ----------
    path
        Node path (``""`` is the root group).
    status
        ``added``, ``removed`` or ``modified``.
    node_type
        ``group``, ``array`` or ``unknown`` (the type on the side where the node exists; the
        new type when it changed).
    metadata
        Changed metadata fields (``shape``, ``chunks``, ``dtype``, ``fill_value``, ``codecs``,
        ...), for modified nodes.
    attributes
        Changed attributes (the field is the attribute key), for modified nodes.
    chunks_added, chunks_changed, chunks_removed
        Chunk coordinates that exist only after, exist on both sides with different bytes,
        or exist only before.
    chunks_virtual
        Those of ``chunks_added`` and ``chunks_changed`` whose new content is a virtual
        reference (bytes read where they live, outside the lake); front ends mark them apart
        on chunk maps.
    layout
        For an array, its shape, chunk shape and dimension names (after the change; before
        it, for a removed array): what a chunk map of the change is drawn on.
    """

    path: str
    status: NodeStatus
    node_type: str
    metadata: tuple[FieldChange, ...] = ()
    attributes: tuple[FieldChange, ...] = ()
    chunks_added: frozenset[ChunkCoords] = frozenset()
    chunks_changed: frozenset[ChunkCoords] = frozenset()
    chunks_removed: frozenset[ChunkCoords] = frozenset()
    chunks_virtual: frozenset[ChunkCoords] = frozenset()
    layout: ArrayLayout | None = field(default=None, compare=False)

    @property
    def n_chunks(self) -> int:
        return len(self.chunks_added) + len(self.chunks_changed) + len(self.chunks_removed)

    def describe(self) -> str:
        """One line: status, path, type, and what changed."""
        sign = {"added": "+", "removed": "-", "modified": "~"}[self.status]
        parts = [str(c) for c in self.metadata]
        parts += [
            f"attributes[{c.field!r}]: {_short(c.before)} -> {_short(c.after)}"
            for c in self.attributes
        ]
        counts = _chunk_counts(self)
        if counts:
            parts.append(f"chunks {counts}")
        tail = ("; " + "; ".join(parts)) if parts else ""
        return f"{sign} /{self.path} ({self.node_type}){tail}"


@dataclass(frozen=True, slots=True)
class DiffSummary:
    """Counts of a :class:`Diff`."""

    nodes_added: int = 0
    nodes_removed: int = 0
    nodes_modified: int = 0
    chunks_added: int = 0
    chunks_changed: int = 0
    chunks_removed: int = 0
    keys_added: int = 0
    keys_changed: int = 0
    keys_removed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class Diff:
    """The difference between two snapshots (``before`` -> ``after``).

    Iterate for the changed nodes (sorted by path), index by node path, ``summary()`` for
    counts, ``to_dataframe()`` for a table. Non-Zarr keys (``raw``) are listed separately.
    """

    nodes: tuple[NodeDiff, ...] = ()
    keys_added: frozenset[str] = frozenset()
    keys_changed: frozenset[str] = frozenset()
    keys_removed: frozenset[str] = frozenset()
    before: str | None = None
    after: str | None = None
    _by_path: Mapping[str, NodeDiff] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_path", {n.path: n for n in self.nodes})

    # -- access --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[NodeDiff]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __bool__(self) -> bool:
        return not self.is_empty()

    def __contains__(self, path: object) -> bool:
        return path in self._by_path

    def __getitem__(self, path: str) -> NodeDiff:
        try:
            return self._by_path[path]
        except KeyError:
            raise KeyError(f"node {path!r} did not change") from None

    def is_empty(self) -> bool:
        return not self.nodes and not (self.keys_added or self.keys_changed or self.keys_removed)

    @property
    def added(self) -> tuple[NodeDiff, ...]:
        return tuple(n for n in self.nodes if n.status == "added")

    @property
    def removed(self) -> tuple[NodeDiff, ...]:
        return tuple(n for n in self.nodes if n.status == "removed")

    @property
    def modified(self) -> tuple[NodeDiff, ...]:
        return tuple(n for n in self.nodes if n.status == "modified")

    def summary(self) -> DiffSummary:
        """Counts of nodes, chunks and non-Zarr keys added, changed and removed."""
        return DiffSummary(
            nodes_added=len(self.added),
            nodes_removed=len(self.removed),
            nodes_modified=len(self.modified),
            chunks_added=sum(len(n.chunks_added) for n in self.nodes),
            chunks_changed=sum(len(n.chunks_changed) for n in self.nodes),
            chunks_removed=sum(len(n.chunks_removed) for n in self.nodes),
            keys_added=len(self.keys_added),
            keys_changed=len(self.keys_changed),
            keys_removed=len(self.keys_removed),
        )

    # -- display -------------------------------------------------------------------------------

    def _title(self) -> str:
        a = (self.before or "?")[:10]
        b = (self.after or "?")[:10]
        s = self.summary()
        return (
            f"Diff {a}..{b}: {s.nodes_added} added, {s.nodes_removed} removed, "
            f"{s.nodes_modified} modified; chunks +{s.chunks_added} ~{s.chunks_changed} "
            f"-{s.chunks_removed}"
        )

    def __repr__(self) -> str:
        lines = [f"<{self._title()}>"]
        shown = self.nodes[:50]
        lines += [f"  {n.describe()}" for n in shown]
        if len(self.nodes) > len(shown):
            lines.append(f"  ... and {len(self.nodes) - len(shown)} more nodes")
        for sign, keys in (
            ("+", self.keys_added),
            ("~", self.keys_changed),
            ("-", self.keys_removed),
        ):
            lines += [f"  {sign} key {k}" for k in sorted(keys)[:20]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from zarrlake.display import diff_html

        return diff_html(self)

    def to_dataframe(self, *, chunks: bool = False) -> pd.DataFrame:
        """A table of the diff (needs pandas).

        One row per changed node (path, status, node type, changed metadata fields and
        attributes, chunk counts); with ``chunks=True`` one row per changed chunk (path,
        chunk coordinates, change).
        """
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]

        if chunks:
            records = [
                {"path": n.path, "chunk": c, "change": change}
                for n in self.nodes
                for change, coords in (
                    ("added", n.chunks_added),
                    ("changed", n.chunks_changed),
                    ("removed", n.chunks_removed),
                )
                for c in sorted(coords)
            ]
            return pd.DataFrame.from_records(records, columns=["path", "chunk", "change"])
        columns = [
            "path",
            "status",
            "node_type",
            "metadata",
            "attributes",
            "chunks_added",
            "chunks_changed",
            "chunks_removed",
        ]
        rows: list[dict[str, object]] = [
            {
                "path": n.path,
                "status": n.status,
                "node_type": n.node_type,
                "metadata": [c.field for c in n.metadata],
                "attributes": [c.field for c in n.attributes],
                "chunks_added": len(n.chunks_added),
                "chunks_changed": len(n.chunks_changed),
                "chunks_removed": len(n.chunks_removed),
            }
            for n in self.nodes
        ]
        return pd.DataFrame.from_records(rows, columns=columns)


def _short(value: Any, limit: int = 60) -> str:
    if value is ABSENT:
        return "<absent>"
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chunk_counts(n: NodeDiff) -> str:
    parts = []
    if n.chunks_added:
        parts.append(f"+{len(n.chunks_added)}")
    if n.chunks_changed:
        parts.append(f"~{len(n.chunks_changed)}")
    if n.chunks_removed:
        parts.append(f"-{len(n.chunks_removed)}")
    return " ".join(parts)


# -- metadata ----------------------------------------------------------------------------------


def _field_value(key: str, value: Any) -> Any:
    if key == "chunk_grid" and isinstance(value, dict) and value.get("name") == "regular":
        return (value.get("configuration") or {}).get("chunk_shape", value)
    return value


def _dict_changes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    out = []
    for key in set(before) | set(after):
        a, b = before.get(key, ABSENT), after.get(key, ABSENT)
        if a is ABSENT or b is ABSENT or a != b:
            out.append((key, a, b))
    return out


def metadata_changes(
    a: NodeMeta, b: NodeMeta
) -> tuple[tuple[FieldChange, ...], tuple[FieldChange, ...]]:
    """(changed structure fields, changed attributes) between two metadata documents."""
    if "unknown" in (a.node_type, b.node_type):
        if a.node_type != b.node_type:
            return (FieldChange("node_type", a.node_type, b.node_type),), ()
        return (FieldChange("document", "<opaque>", "<opaque, changed>"),), ()
    fields = []
    for key, x, y in _dict_changes(a.structure, b.structure):
        name = _FIELD_NAMES.get(key, key)
        fx = x if x is ABSENT else _field_value(key, x)
        fy = y if y is ABSENT else _field_value(key, y)
        fields.append(FieldChange(name, fx, fy))
    order = {name: i for i, name in enumerate(_FIELD_ORDER)}
    fields.sort(key=lambda c: (order.get(c.field, len(order)), c.field))
    attrs = sorted(
        (FieldChange(k, x, y) for k, x, y in _dict_changes(a.attributes, b.attributes)),
        key=lambda c: c.field,
    )
    return tuple(fields), tuple(attrs)


# -- chunks ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShardDelta:
    """How one shard position differs: row indices into the ``before`` and ``after`` shards."""

    pos: ChunkCoords
    shard_shape: tuple[int, ...]
    before: Shard
    after: Shard
    added: np.ndarray  # rows of ``after`` with no entry before
    changed: np.ndarray  # rows of ``after`` whose hash differs from before
    removed: np.ndarray  # rows of ``before`` with no entry after

    def coords(self, shard: Shard, rows: np.ndarray) -> np.ndarray:
        """Chunk coordinates (``n x ndim`` int64) of ``rows`` of ``shard``."""
        return _flat_to_coords(self.pos, shard.flat[rows], self.shard_shape)

    def refs(self, rows: np.ndarray) -> Iterator[tuple[ChunkCoords, ChunkRef]]:
        """(coords, ref) of ``rows`` of the ``after`` shard."""
        coords = self.coords(self.after, rows).tolist()
        for c, i in zip(coords, rows.tolist(), strict=True):
            yield tuple(c), self.after.ref_at(i)


def _flat_to_coords(pos: ChunkCoords, flat: np.ndarray, shard_shape: tuple[int, ...]) -> np.ndarray:
    if not shard_shape:
        return np.zeros((len(flat), 0), np.int64)
    local = np.stack(np.unravel_index(flat.astype(np.int64), shard_shape), axis=1).astype(np.int64)
    return local + np.asarray(pos, np.int64) * np.asarray(shard_shape, np.int64)


_NO_ROWS = np.empty(0, np.intp)
_NO_ROWS.flags.writeable = False
_NO_SHARD = Shard.empty()  # the side of a shard position that has none (never modified)


def _compare_shards(a: Shard, b: Shard) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(added, changed, removed) rows; both shards' indices are sorted and unique."""
    if not len(a):  # a shard that is new (the common case of a diff): all of it is added
        return np.arange(len(b)), _NO_ROWS, _NO_ROWS
    if not len(b):
        return _NO_ROWS, _NO_ROWS, np.arange(len(a))
    at = np.minimum(np.searchsorted(a.flat, b.flat), len(a) - 1)
    both = a.flat[at] == b.flat
    ib = np.nonzero(both)[0]
    ia = at[ib]
    differs = (a.hashes[ia] != b.hashes[ib]).any(axis=1)
    only_a = np.ones(len(a), bool)
    only_a[ia] = False
    return np.nonzero(~both)[0], ib[differs], np.nonzero(only_a)[0]


def manifest_delta(
    before: ManifestIndex | None, after: ManifestIndex | None, reader: SnapshotReader
) -> Iterator[ShardDelta]:
    """The differing shards of two manifests, skipping subtrees and shards whose hash is equal.

    Both manifests must share a shard shape (or one may be ``None``); see :func:`diff_roots`
    for the general case.
    """
    known = after if after is not None else before
    shape = known.shard_shape if known is not None else ()
    differing = index_delta(before, after, reader)
    wanted = [h for _, ha, hb in differing for h in (ha, hb) if h is not None]
    if len(wanted) > 1:  # one query for all, instead of one per shard
        reader.prefetch_shards(wanted)
    for pos, ha, hb in differing:
        sa = reader.shard(ha) if ha is not None else _NO_SHARD
        sb = reader.shard(hb) if hb is not None else _NO_SHARD
        added, changed, removed = _compare_shards(sa, sb)
        yield ShardDelta(pos, shape, sa, sb, added, changed, removed)


def _as_set(arr: np.ndarray) -> frozenset[ChunkCoords]:
    return frozenset(tuple(row) for row in arr.tolist())


class _CoordsOf:
    """Rows of shards gathered by shard position, turned into chunk coordinates all at once
    (per shard, the conversion would cost more than the comparison for a diff touching
    hundreds of shards)."""

    def __init__(self, shard_shape: tuple[int, ...]) -> None:
        self.shape = shard_shape
        self.pos: list[ChunkCoords] = []
        self.flat: list[np.ndarray] = []

    def add(self, pos: ChunkCoords, shard: Shard, rows: np.ndarray) -> None:
        if len(rows):
            self.pos.append(pos)
            self.flat.append(shard.flat[rows])

    def coords(self) -> frozenset[ChunkCoords]:
        if not self.flat:
            return frozenset()
        if not self.shape:  # a 0-d array: one chunk, at ()
            return frozenset({()})
        counts = [len(f) for f in self.flat]
        flat = np.concatenate(self.flat).astype(np.int64)
        shape = np.asarray(self.shape, np.int64)
        origins = np.repeat(np.asarray(self.pos, np.int64) * shape, counts, axis=0)
        return _as_set(np.stack(np.unravel_index(flat, self.shape), axis=1) + origins)


_Sets = tuple[
    frozenset[ChunkCoords], frozenset[ChunkCoords], frozenset[ChunkCoords], frozenset[ChunkCoords]
]


def _chunk_sets(
    a: NodeEntry | None,
    b: NodeEntry | None,
    ma: NodeMeta | None,
    mb: NodeMeta | None,
    reader: SnapshotReader,
) -> _Sets:
    """(added, changed, removed, virtual among added and changed) chunk coordinates."""
    ha = a.manifest if a is not None and ma is not None and ma.is_array else None
    hb = b.manifest if b is not None and mb is not None and mb.is_array else None
    if ha == hb:
        return frozenset(), frozenset(), frozenset(), frozenset()
    ia = reader.index(ha) if ha is not None else None
    ib = reader.index(hb) if hb is not None else None
    if ia is not None and ib is not None and ia.shard_shape != ib.shard_shape:
        return _full_compare(ia, ib, reader)
    known = ib if ib is not None else ia
    assert known is not None  # ha != hb, so one side at least has a manifest
    added, changed, removed, virtual = (_CoordsOf(known.shard_shape) for _ in range(4))
    for d in manifest_delta(ia, ib, reader):
        added.add(d.pos, d.after, d.added)
        changed.add(d.pos, d.after, d.changed)
        removed.add(d.pos, d.before, d.removed)
        if d.after.sources:  # only shards with a sources table hold virtual entries
            new = np.concatenate([d.added, d.changed]).astype(np.int64)
            virtual.add(d.pos, d.after, new[d.after.kinds[new] == VIRTUAL])
    return added.coords(), changed.coords(), removed.coords(), virtual.coords()


_NONE: _Sets = (frozenset(), frozenset(), frozenset(), frozenset())


def _recorded_sets(changes: ChangeSet, path: str, reverse: bool) -> _Sets | None:
    """A node's chunk sets as an exact change set records them (``reverse``: from the commit
    back to its parent); ``None`` where it does not know them."""
    nc = changes.nodes.get(path)
    if nc is None:
        return _NONE
    if nc.deleted or nc.kinds is None:
        return None  # the node's old chunks are not listed
    out: tuple[set[ChunkCoords], ...] = (set(), set(), set(), set())
    added, removed = (REMOVED, ADDED) if reverse else (ADDED, REMOVED)
    virtual = VIRTUAL_BEFORE if reverse else VIRTUAL_AFTER
    for c, k in nc.kinds.items():
        kind = k & 3
        if kind == added:
            out[0].add(c)
        elif kind == CHANGED:
            out[1].add(c)
        elif kind == removed:
            out[2].add(c)
        if k & virtual and kind != removed:
            out[3].add(c)
    return frozenset(out[0]), frozenset(out[1]), frozenset(out[2]), frozenset(out[3])


def _full_compare(ia: ManifestIndex, ib: ManifestIndex, reader: SnapshotReader) -> _Sets:
    # Shard layouts differ (the array was replaced): positions cannot be matched, compare all.
    left = {c: r.hash for c, r in iter_manifest(ia, reader)}
    right = dict(iter_manifest(ib, reader))
    added = frozenset(c for c in right if c not in left)
    removed = frozenset(c for c in left if c not in right)
    changed = frozenset(c for c, r in right.items() if c in left and left[c] != r.hash)
    virtual = frozenset(c for c in added | changed if right[c].source is not None)
    return added, changed, removed, virtual


# -- roots -------------------------------------------------------------------------------------


def _node_diff(
    path: str,
    a: NodeEntry | None,
    b: NodeEntry | None,
    reader: SnapshotReader,
    recorded: _Sets | None = None,
) -> NodeDiff | None:
    ma = reader.node_meta(a.meta) if a is not None else None
    mb = reader.node_meta(b.meta) if b is not None else None
    changed: frozenset[ChunkCoords]
    if recorded is not None:
        added, changed, removed, virtual = recorded
    elif ma is not None and mb is not None and ma.ndim != mb.ndim and ma.is_array and mb.is_array:
        # coordinates of different rank never match: every chunk is removed and added
        added, _, _, virtual = _chunk_sets(None, b, None, mb, reader)
        _, _, removed, _ = _chunk_sets(a, None, ma, None, reader)
        changed = frozenset()
    else:
        added, changed, removed, virtual = _chunk_sets(a, b, ma, mb, reader)
    if ma is None:
        assert mb is not None  # one side at least holds the node
        return NodeDiff(
            path,
            "added",
            mb.node_type,
            chunks_added=added,
            chunks_virtual=virtual,
            layout=mb.layout,
        )
    if mb is None:
        return NodeDiff(path, "removed", ma.node_type, chunks_removed=removed, layout=ma.layout)
    fields: tuple[FieldChange, ...] = ()
    attrs: tuple[FieldChange, ...] = ()
    if a is not None and b is not None and a.meta != b.meta:
        fields, attrs = metadata_changes(ma, mb)
    if not (fields or attrs or added or changed or removed):
        return None  # e.g. the document was reformatted, or a manifest rewritten identically
    return NodeDiff(
        path, "modified", mb.node_type, fields, attrs, added, changed, removed, virtual, mb.layout
    )


def diff_roots(
    before: Root,
    after: Root,
    reader: SnapshotReader,
    *,
    labels: tuple[str | None, str | None] = (None, None),
    changes: ChangeSet | None = None,
    reverse: bool = False,
) -> Diff:
    """Everything that differs between two snapshots.

    Unchanged nodes (equal metadata and manifest hashes) and unchanged shards (equal hashes)
    are skipped without being loaded. ``changes`` is the change set of ``after`` against
    ``before`` (``reverse``: of ``before`` against ``after``); where it is exact, chunks are
    read from it and no manifest is loaded.
    """
    known = changes if changes is not None and changes.exact else None
    nodes = []
    for path in sorted(set(before.nodes) | set(after.nodes)):
        a, b = before.nodes.get(path), after.nodes.get(path)
        if a == b:
            continue
        recorded = _recorded_sets(known, path, reverse) if known is not None else None
        nd = _node_diff(path, a, b, reader, recorded)
        if nd is not None:
            nodes.append(nd)
    ka, kb = before.raw, after.raw
    return Diff(
        tuple(nodes),
        keys_added=frozenset(k for k in kb if k not in ka),
        keys_changed=frozenset(k for k in kb if k in ka and ka[k].hash != kb[k].hash),
        keys_removed=frozenset(k for k in ka if k not in kb),
        before=labels[0],
        after=labels[1],
    )
