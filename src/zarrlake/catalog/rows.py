"""Row types of the catalog and the small query pieces every concern shares."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.schema import commits, refs
from zarrlake.model.lifecycle import session_status
from zarrlake.types import SessionInfo, from_epoch

__all__ = [
    "BATCH",
    "COMMIT_COLS",
    "CommitRow",
    "RefLogRow",
    "SessionRow",
    "StagedRow",
    "batches",
    "bound_head_query",
    "commit_row",
    "head_query",
    "session_row",
    "staged_row",
    "staged_values",
]

BATCH = 500  # hashes or ids per IN (...) list


def batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most :data:`BATCH`."""
    for i in range(0, len(items), BATCH):
        yield items[i : i + BATCH]


@dataclass(frozen=True, slots=True)
class CommitRow:
    id: str
    parent_id: str | None
    merge_parent_id: str | None
    root_hash: bytes
    changes_hash: bytes | None
    author: str
    message: str
    meta: dict[str, Any]
    created_at: float
    generation: int


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    repo_id: int
    branch: str
    base_commit: str
    author: str
    isolation: str
    status: str
    created_at: float
    expires_at: float
    commit_id: str | None

    def info(self, now: float) -> SessionInfo:
        """The public description of this session at catalog time ``now``."""
        return SessionInfo(
            self.id,
            self.branch,
            self.base_commit,
            self.author,
            self.isolation,
            session_status(self.status, self.expires_at, now),
            from_epoch(self.created_at),
            from_epoch(self.expires_at),
            self.commit_id,
        )


@dataclass(frozen=True, slots=True)
class StagedRow:
    path: str
    kind: str
    key: str
    hash: bytes | None
    length: int
    inline: bytes | None
    pack: bytes | None = None
    offset: int = 0
    crc: int | None = None


@dataclass(frozen=True, slots=True)
class RefLogRow:
    name: str
    action: str
    old_commit: str | None
    new_commit: str | None
    author: str
    at: float
    message: str


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


def commit_row(r: Any) -> CommitRow:
    return CommitRow(
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


def session_row(r: Any) -> SessionRow:
    return SessionRow(
        r.id,
        r.repo_id,
        r.branch,
        r.base_commit,
        r.author,
        r.isolation,
        r.status,
        float(r.created_at),
        float(r.expires_at),
        r.commit_id,
    )


def staged_row(r: Any) -> StagedRow:
    return StagedRow(
        r.path,
        r.kind,
        r.key,
        None if r.hash is None else bytes(r.hash),
        int(r.length),
        None if r.inline is None else bytes(r.inline),
        None if r.pack is None else bytes(r.pack),
        int(r.pack_offset or 0),
        None if r.crc is None else int(r.crc),
    )


def staged_values(session_id: str, rows: Sequence[StagedRow]) -> list[dict[str, Any]]:
    return [
        {
            "session_id": session_id,
            "path": r.path,
            "kind": r.kind,
            "key": r.key,
            "hash": r.hash,
            "length": r.length,
            "inline": r.inline,
            "pack": r.pack,
            "pack_offset": None if r.pack is None else r.offset,
            "crc": r.crc,
        }
        for r in rows
    ]


def head_query(repo_id: int, branch: str) -> sa.Select[Any]:
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
    q = head_query(repo_id, sa.bindparam("h_branch", type_=refs.c.name.type))  # type: ignore[arg-type]
    return q if clock is None else q.add_columns(dia.now_column(clock))
