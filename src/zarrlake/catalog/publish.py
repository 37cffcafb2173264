"""The statements of the commit transaction (:meth:`CommitQueries.insert_commit`), built so
that a commit costs a few round trips whatever it checks.

A session's commit on PostgreSQL is three statements between ``BEGIN`` and ``COMMIT``:

1. :func:`preflight`: the catalog's clock, its identity and schema version, the session's state,
   and the shared gc fence (an advisory lock), in one ``SELECT``;
2. :func:`lock_head`: the branch row locked ``FOR UPDATE``, and whether gc claimed any object
   (read by a statement that starts after the fence is held, so it sees every claim gc
   committed before);
3. :func:`pg_publish`: every write (nodes, the commit, the compare-and-swap, the ref log, the
   idempotency key, closing the session) as data-modifying CTEs of one statement.

An idempotency key is looked up by a statement of its own after the branch row is locked, so
that it sees a key a racing commit recorded while this one waited for the lock. SQLite runs one
writing transaction at a time, so it reads the key with the branch, and sends the writes as
statements of their own (it has no data-modifying CTEs); its statements cost no round trip.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.rows import CommitRow
from zarrlake.catalog.schema import (
    blobs,
    commit_keys,
    commits,
    gc_marks,
    info,
    reads,
    reflog,
    refs,
    sessions,
    staged,
)

__all__ = ["PG_INLINE_BLOBS", "lock_head", "pg_publish", "preflight"]

# Nodes written by the one publishing statement; a commit writing more (a large change touches
# many shards) sends them before it, in one executemany.
PG_INLINE_BLOBS = 64


def preflight(
    dialect: str,
    repo_id: int,
    session_id: str | None,
    *,
    branch: str | None = None,
    key: str | None = None,
) -> sa.Select[Any]:
    """Clock, identity, schema version and (with a session) its state, the fence, and whether
    it recorded reads: one row. With ``branch`` (SQLite, whose writing transaction already
    excludes every other writer), also what :func:`lock_head` reads, as ``head`` (``None`` if
    there is no such branch), ``claims`` and ``recorded``."""

    def setting(name: str) -> sa.ScalarSelect[Any]:
        return sa.select(info.c.value).where(info.c.key == name).scalar_subquery()

    cols: list[sa.ColumnElement[Any]] = [
        dia.now_column(dialect),
        setting("catalog_id").label("catalog_id"),
        setting("schema_version").label("schema_version"),
    ]
    if session_id is not None:
        this = sessions.c.id == session_id
        cols += [
            sa.select(sessions.c.status).where(this).scalar_subquery().label("status"),
            sa.select(sessions.c.expires_at).where(this).scalar_subquery().label("expires_at"),
            sa.exists().where(reads.c.session_id == session_id).label("has_reads"),
        ]
        fence = dia.gc_fence_column(dialect, repo_id)
        if fence is not None:
            cols.append(fence)
    if branch is not None:
        cols.append(
            sa.select(refs.c.commit_id)
            .where(*_branch(repo_id, branch))
            .scalar_subquery()
            .label("head")
        )
        cols += _head_extras(repo_id, branch, claims=session_id is not None, key=key)
    return sa.select(*cols)


def _branch(repo_id: int, branch: str) -> list[sa.ColumnElement[bool]]:
    return [refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch"]


def _head_extras(
    repo_id: int, branch: str, *, claims: bool, key: str | None
) -> list[sa.ColumnElement[Any]]:
    cols: list[sa.ColumnElement[Any]] = []
    if claims:
        cols.append(
            sa.exists()
            .where(
                gc_marks.c.repo_id == repo_id,
                gc_marks.c.kind == "object",
                gc_marks.c.state.in_(("deleting", "deleted")),
            )
            .label("claims")
        )
    if key is not None:
        cols.append(
            sa.select(commit_keys.c.commit_id)
            .where(
                commit_keys.c.repo_id == repo_id,
                commit_keys.c.branch == branch,
                commit_keys.c.key == key,
            )
            .scalar_subquery()
            .label("recorded")
        )
    return cols


def lock_head(repo_id: int, branch: str, *, claims: bool, key: str | None) -> sa.Select[Any]:
    """The branch's head, its row locked until the end of the transaction; with ``claims``,
    whether gc claims (deleting) or deleted any object of the repo; with ``key``, the commit
    recorded on the branch with that idempotency key. No row if there is no such branch."""
    return (
        sa.select(
            refs.c.commit_id.label("head"),
            *_head_extras(repo_id, branch, claims=claims, key=key),
        )
        .where(*_branch(repo_id, branch))
        .with_for_update(of=refs)
    )


def commit_values(repo_id: int, row: CommitRow, now: float) -> dict[str, Any]:
    return {
        "repo_id": repo_id,
        "id": row.id,
        "parent_id": row.parent_id,
        "merge_parent_id": row.merge_parent_id,
        "root_hash": row.root_hash,
        "changes_hash": row.changes_hash,
        "author": row.author,
        "message": row.message,
        "meta": json.dumps(row.meta),
        "created_at": now,
        "generation": row.generation,
    }


def reflog_values(
    repo_id: int, branch: str, action: str, base: str, row: CommitRow, now: float
) -> dict[str, Any]:
    return {
        "repo_id": repo_id,
        "name": branch,
        "action": action,
        "old_commit": base,
        "new_commit": row.id,
        "author": row.author,
        "at": now,
        "message": row.message,
    }


def blob_values(
    repo_id: int, items: dict[bytes, tuple[str, bytes]], now: float
) -> list[dict[str, Any]]:
    return [
        {"repo_id": repo_id, "hash": h, "kind": k, "data": d, "created_at": now}
        for h, (k, d) in items.items()
    ]


def pg_publish(
    repo_id: int,
    branch: str,
    base: str,
    row: CommitRow,
    now: float,
    *,
    new_blobs: list[dict[str, Any]],
    action: str,
    session_id: str | None,
    idempotency_key: str | None,
) -> sa.Select[Any]:
    """Every write of a commit as one PostgreSQL statement; it returns how many branch rows the
    compare-and-swap moved (1, since the transaction holds the branch row's lock)."""
    writes: list[Any] = []
    if new_blobs:
        ins = postgresql.insert(blobs).values(new_blobs)
        # a node written again refreshes created_at (gc's grace period; see put_blobs_in)
        ins = ins.on_conflict_do_update(
            index_elements=[blobs.c.repo_id, blobs.c.hash],
            set_={"created_at": ins.excluded.created_at},
        )
        writes.append(ins)
    writes.append(sa.insert(commits).values(commit_values(repo_id, row, now)))
    writes.append(sa.insert(reflog).values(reflog_values(repo_id, branch, action, base, row, now)))
    if idempotency_key is not None:
        writes.append(
            sa.insert(commit_keys).values(
                repo_id=repo_id,
                branch=branch,
                key=idempotency_key,
                commit_id=row.id,
                created_at=now,
            )
        )
    if session_id is not None:
        writes += close_session(session_id, row.id)
    moved = (
        sa.update(refs)
        .where(*_branch(repo_id, branch), refs.c.commit_id == base)
        .values(commit_id=row.id, updated_at=now)
        .returning(refs.c.name)
        .cte("zl_moved")
    )
    q = sa.select(sa.func.count().label("moved")).select_from(moved)
    for i, stmt in enumerate(writes):
        q = q.add_cte(stmt.cte(f"zl_w{i}"))
    return q


def close_session(session_id: str, commit_id: str) -> list[Any]:
    """Close a committed session: its state, then its staged rows and reads go."""
    return [
        sa.update(sessions)
        .where(sessions.c.id == session_id)
        .values(status="committed", commit_id=commit_id),
        sa.delete(staged).where(staged.c.session_id == session_id),
        sa.delete(reads).where(reads.c.session_id == session_id),
    ]
