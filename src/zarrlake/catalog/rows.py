"""Rows to values and back: the catalog's own encodings (chunk coordinates as ``"1,2"``, a
serializable session's reads as ``""`` / ``"1,2"`` / ``"raw:<key>"``) end here."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.driver import Prepared
from zarrlake.catalog.schema import commits, refs
from zarrlake.errors import CatalogError
from zarrlake.model.manifest import ChunkRef
from zarrlake.model.records import CommitRecord, SessionRecord, StagedEntry
from zarrlake.model.virtual import VirtualSource
from zarrlake.types import ChunkCoords

__all__ = [
    "BATCH",
    "COMMIT_COLS",
    "batches",
    "bound_head_query",
    "commit_record",
    "coords_text",
    "head_query",
    "prepared_head",
    "read_values",
    "reads_from",
    "session_record",
    "staged_entry",
    "staged_values",
]

BATCH = 500  # hashes or ids per IN (...) list


def batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most :data:`BATCH`."""
    for i in range(0, len(items), BATCH):
        yield items[i : i + BATCH]


COMMIT_COLS = [
    commits.c.id,
    commits.c.parent_id,
    commits.c.merge_parent_id,
    commits.c.root_hash,
    commits.c.changes_hash,
    commits.c.author,
    commits.c.message,
    commits.c.meta,
    commits.c.created_at,
    commits.c.generation,
]


def commit_record(r: Any) -> CommitRecord:
    return CommitRecord(
        r.id,
        r.parent_id,
        r.merge_parent_id,
        bytes(r.root_hash),
        None if r.changes_hash is None else bytes(r.changes_hash),
        r.author,
        r.message,
        json.loads(r.meta),
        float(r.created_at),
        int(r.generation),
    )


def session_record(r: Any) -> SessionRecord:
    return SessionRecord(
        r.id,
        r.branch,
        r.base_commit,
        r.author,
        r.isolation,
        r.status,
        float(r.created_at),
        float(r.expires_at),
        r.commit_id,
    )


def coords_text(coords: ChunkCoords) -> str:
    return ",".join(map(str, coords))


def _text_coords(text: str) -> ChunkCoords:
    return tuple(map(int, text.split(","))) if text else ()


def staged_entry(r: Any, sources: dict[str, VirtualSource] | None = None) -> StagedEntry:
    """The entry of a ``zl_staged`` row (all its columns, in the table's order).
    ``sources``: source records decoded so far (by their text), so that the rows of one
    query naming one source share one record."""
    _, path, kind, key, h, length, inline, pack, offset, crc, source = r
    ref = None
    if kind == "vrefs":  # a batch: its shard in ``inline``, the shard shape in ``source``
        if h is None or inline is None:
            raise CatalogError(f"a staged batch of {path!r} at {key!r} is corrupt")
        ref = ChunkRef(bytes(h), int(length), bytes(inline))
        return StagedEntry(path, "vrefs", _text_coords(key), source or "", ref)
    if kind == "vshape":  # the shard shape of an array's batches, in ``source``
        return StagedEntry(path, "vshape", (), source or "")
    if h is not None and source is not None:
        src = None if sources is None else sources.get(source)
        if src is None:
            src = VirtualSource.decode(source)
            if sources is not None:
                sources[source] = src
        ref = ChunkRef(bytes(h), int(length), offset=int(offset or 0), source=src)
    elif h is not None:
        ref = ChunkRef(
            bytes(h),
            int(length),
            None if inline is None else bytes(inline),
            None if pack is None else bytes(pack),
            int(offset or 0),
            None if crc is None else int(crc),
        )
    if kind == "chunk":
        return StagedEntry(path, "chunk", _text_coords(key), "", ref)
    return StagedEntry(path, kind, (), key, ref)


def staged_key(e: StagedEntry) -> str:
    """The ``key`` column of an entry."""
    if e.kind == "vshape":
        return ""
    return coords_text(e.coords) if e.kind in ("chunk", "vrefs") else e.key


def staged_values(session_id: str, entries: Iterable[StagedEntry]) -> list[dict[str, Any]]:
    out = []
    encoded: dict[VirtualSource, str] = {}  # each source's record written once per call
    for e in entries:
        ref = e.ref
        source = e.key if e.kind in ("vrefs", "vshape") else None  # a batch's shard shape
        if ref is not None and ref.source is not None:
            source = encoded.get(ref.source)
            if source is None:
                source = encoded[ref.source] = ref.source.encode()
        out.append(
            {
                "session_id": session_id,
                "path": e.path,
                "kind": e.kind,
                "key": staged_key(e),
                "hash": None if ref is None else ref.hash,
                "length": 0 if ref is None else ref.length,
                "inline": None if ref is None else ref.inline,
                "pack": None if ref is None else ref.pack,
                "pack_offset": None
                if ref is None or (ref.pack is None and ref.source is None)
                else ref.offset,
                "crc": None if ref is None else ref.crc,
                "source": source,
            }
        )
    return out


# a read: (node path, chunk coordinates; None for the node's metadata) or a raw key
Read = tuple[str, ChunkCoords | None] | str


def read_values(session_id: str, items: Iterable[Read]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        if isinstance(item, str):
            path, key = "", "raw:" + item
        else:
            path, key = item[0], "" if item[1] is None else coords_text(item[1])
        out.append({"session_id": session_id, "path": path, "key": key})
    return out


def reads_from(
    rows: Iterable[tuple[str, str]],
) -> tuple[frozenset[tuple[str, ChunkCoords | None]], frozenset[str]]:
    """(nodes and chunks read, raw keys read) from rows of ``zl_reads``."""
    pairs = list(rows)
    raw = frozenset(k[4:] for _, k in pairs if k.startswith("raw:"))
    nodes = frozenset(
        (p, _text_coords(k) if k else None) for p, k in pairs if not k.startswith("raw:")
    )
    return nodes, raw


def head_query(repo_id: Any, branch: Any) -> sa.Select[Any]:
    return (
        sa.select(*COMMIT_COLS)
        .select_from(refs)
        .join(
            commits,
            sa.and_(commits.c.repo_id == refs.c.repo_id, commits.c.id == refs.c.commit_id),
        )
        .where(refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch")
    )


@functools.cache
def bound_head_query(clock: str | None = None) -> sa.Select[Any]:
    """:func:`head_query` built once, with ``h_repo`` and ``h_branch`` bound at execution;
    with ``clock`` (a dialect name), the catalog's clock alongside as ``now``."""
    repo_id = sa.bindparam("h_repo", type_=sa.Integer)
    q = head_query(repo_id, sa.bindparam("h_branch", type_=refs.c.name.type))
    return q if clock is None else q.add_columns(dia.now_column(clock))


@functools.cache
def prepared_head(clock: str | None = None) -> Prepared:
    """:func:`bound_head_query`, compiled once per dialect (:mod:`.driver`)."""
    return Prepared(bound_head_query(clock))
