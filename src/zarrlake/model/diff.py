"""What changed between two snapshots: nodes, metadata fields, chunk coordinates.

A diff compares two :class:`Root` values through a :class:`SnapshotReader`. Nodes whose
metadata and manifest hashes are equal are skipped without loading anything; inside an array,
shards whose hashes are equal are skipped too, so the cost follows the size of the change, not
the size of the arrays or the length of the history. A commit against its first parent (either
way round) needs no manifest at all: its change set says how each chunk changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from zarrlake.model.changes import ChangeSet, SnapshotReader, all_exact
from zarrlake.model.chunkdiff import (
    ChunkSets,
    chunk_sets,
    recorded_sets,
)
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
    "diff_roots",
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


# -- roots -------------------------------------------------------------------------------------


def _node_diff(
    path: str,
    a: NodeEntry | None,
    b: NodeEntry | None,
    reader: SnapshotReader,
    recorded: ChunkSets | None = None,
) -> NodeDiff | None:
    ma = reader.node_meta(a.meta) if a is not None else None
    mb = reader.node_meta(b.meta) if b is not None else None
    changed: frozenset[ChunkCoords]
    if recorded is not None:
        added, changed, removed, virtual = recorded
    elif ma is not None and mb is not None and ma.ndim != mb.ndim and ma.is_array and mb.is_array:
        # coordinates of different rank never match: every chunk is removed and added
        added, _, _, virtual = chunk_sets(None, b, None, mb, reader)
        _, _, removed, _ = chunk_sets(a, None, ma, None, reader)
        changed = frozenset()
    else:
        added, changed, removed, virtual = chunk_sets(a, b, ma, mb, reader)
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
    changes: Sequence[ChangeSet] = (),
    reverse: bool = False,
) -> Diff:
    """Everything that differs between two snapshots.

    Unchanged nodes (equal metadata and manifest hashes) and unchanged shards (equal hashes)
    are skipped without being loaded. ``changes`` are the change sets of the commits from
    ``before`` to ``after`` along first parents, oldest first (``reverse``: from ``after``
    to ``before``); where they are exact, chunks are read from them and no manifest is
    loaded.
    """
    known = changes if all_exact(changes) else None
    nodes = []
    for path in sorted(set(before.nodes) | set(after.nodes)):
        a, b = before.nodes.get(path), after.nodes.get(path)
        if a == b:
            continue
        recorded = recorded_sets(known, path, reverse) if known is not None else None
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
