"""The statements of the commit transaction (:class:`.writer.CommitWriter`), built so that a
commit costs a few round trips whatever it checks; the SQLite and PostgreSQL forms of a
commit's writes both live here.

A session's commit on PostgreSQL is three statements between ``BEGIN`` and ``COMMIT``:

1. :func:`preflight`: the catalog's clock, its identity and schema version, the session's state,
   and the shared gc fence (an advisory lock), in one ``SELECT``;
2. :func:`lock_head`: the branch row locked ``FOR UPDATE``, and whether gc claimed any object
   (read by a statement that starts after the fence is held, so it sees every claim gc
   committed before);
3. :func:`pg_publish`: every write (nodes, the commit, the compare-and-swap, the ref log, the
   idempotency key, closing the session) as data-modifying CTEs of one statement.

An idempotency key is looked up (:mod:`.keys`) after the branch row is locked, so that it sees
a key a racing commit recorded while this one waited for the lock. SQLite runs one writing
transaction at a time, so it reads the branch with the preflight, and sends the writes as
statements of their own (it has no data-modifying CTEs); its statements cost no round trip.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.driver import Prepared
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
from zarrlake.model.records import CommitRecord

__all__ = ["lock_head", "params", "pg_publish", "pg_values", "preflight"]


def params(repo_id: int, branch: str, session_id: str | None, key: str | None) -> dict[str, Any]:
    """The bound values of :func:`preflight` and :func:`lock_head`."""
    return {"p_repo": repo_id, "p_branch": branch, "p_session": session_id, "p_key": key}


@functools.cache
def preflight(dialect: str, session: bool, branch: bool) -> Prepared:
    """Clock, identity, schema version and (with a session) its state, the fence, and whether
    it recorded reads: one row. With ``branch`` (SQLite, whose writing transaction already
    excludes every other writer), also what :func:`lock_head` reads, as ``head`` (``None`` if
    there is no such branch) and ``claims``. Built once per shape (the values
    are bound: :func:`params`), so a commit pays no statement construction."""
    repo_id, session_id = _repo(), sa.bindparam("p_session", type_=sessions.c.id.type)

    def setting(name: str) -> sa.ScalarSelect[Any]:
        return sa.select(info.c.value).where(info.c.key == name).scalar_subquery()

    cols: list[sa.ColumnElement[Any]] = [
        dia.now_column(dialect),
        setting("catalog_id").label("catalog_id"),
        setting("schema_version").label("schema_version"),
    ]
    if session:
        this = sessions.c.id == session_id
        cols += [
            sa.select(sessions.c.status).where(this).scalar_subquery().label("status"),
            sa.select(sessions.c.expires_at).where(this).scalar_subquery().label("expires_at"),
            sa.exists().where(reads.c.session_id == session_id).label("has_reads"),
        ]
        fence = dia.gc_fence_column(dialect, repo_id)
        if fence is not None:
            cols.append(fence)
    if branch:
        name = _name()
        head = sa.select(refs.c.commit_id).where(*_branch(repo_id, name)).scalar_subquery()
        cols.append(head.label("head"))
        cols += _head_extras(repo_id, claims=session)
    return Prepared(sa.select(*cols))


def _repo() -> sa.BindParameter[int]:
    return sa.bindparam("p_repo", type_=sa.Integer)


def _name() -> sa.BindParameter[str]:
    return sa.bindparam("p_branch", type_=refs.c.name.type)


def _branch(repo_id: Any, branch: Any) -> list[sa.ColumnElement[bool]]:
    return [refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch"]


def _head_extras(repo_id: Any, *, claims: bool) -> list[sa.ColumnElement[Any]]:
    cols: list[sa.ColumnElement[Any]] = []
    if claims:
        cols.append(
            sa.exists()
            .where(
                gc_marks.c.repo_id == repo_id,
                gc_marks.c.kind == "object",
                # not IN (...): a list is expanded at execution, which Prepared cannot
                sa.or_(gc_marks.c.state == "deleting", gc_marks.c.state == "deleted"),
            )
            .label("claims")
        )
    return cols


@functools.cache
def lock_head(claims: bool) -> Prepared:
    """The branch's head, its row locked until the end of the transaction; with ``claims``,
    whether gc claims (deleting) or deleted any object of the repo. No row if there is no such
    branch. Values bound by :func:`params`."""
    repo_id, branch = _repo(), _name()
    return Prepared(
        sa.select(
            refs.c.commit_id.label("head"),
            *_head_extras(repo_id, claims=claims),
        )
        .where(*_branch(repo_id, branch))
        .with_for_update(of=refs)
    )


# The SQLite commit's writes, built once; values bound at execution.
INSERT_COMMIT = Prepared(sa.insert(commits))
INSERT_REFLOG = Prepared(sa.insert(reflog))
# a key recorded again (its earlier commit is no longer on the branch: see .keys) is replaced
_KEY = sqlite.insert(commit_keys)
INSERT_KEY = Prepared(
    _KEY.on_conflict_do_update(
        index_elements=list(commit_keys.primary_key.columns),
        set_={"commit_id": _KEY.excluded.commit_id, "created_at": _KEY.excluded.created_at},
    )
)
MOVE_BRANCH = Prepared(
    sa.update(refs)
    .where(*_branch(_repo(), _name()))
    .where(refs.c.commit_id == sa.bindparam("p_base"))
    .values(commit_id=sa.bindparam("p_new"), updated_at=sa.bindparam("p_now"))
)
_CLOSE_SESSION = (
    sa.update(sessions)
    .where(sessions.c.id == sa.bindparam("p_session", type_=sessions.c.id.type))
    .values(status="committed", commit_id=sa.bindparam("p_commit", type_=sessions.c.id.type))
)
_DROP_STAGED = sa.delete(staged).where(staged.c.session_id == sa.bindparam("p_session"))
_DROP_READS = sa.delete(reads).where(reads.c.session_id == sa.bindparam("p_session"))
CLOSE_SESSION = Prepared(_CLOSE_SESSION)
DROP_STAGED = Prepared(_DROP_STAGED)
DROP_READS = Prepared(_DROP_READS)


def commit_values(repo_id: int, row: CommitRecord, now: float) -> dict[str, Any]:
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
    repo_id: int, branch: str, action: str, base: str, row: CommitRecord, now: float
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


@functools.cache
def pg_publish(nodes: bool, key: bool, session: bool) -> Prepared:
    """Every write of a commit as one PostgreSQL statement, built once per shape and executed
    with :func:`pg_values`; it returns how many branch rows the compare-and-swap moved (1,
    since the transaction holds the branch row's lock). The new nodes travel as three arrays
    (``unnest``), so the statement's text, and its compiled form, do not depend on how many
    there are."""

    from sqlalchemy.dialects.postgresql import ARRAY  # only a PostgreSQL catalog loads it

    from zarrlake.catalog.pg_arrays import ByteaArray

    def bind(name: str, column: sa.Column[Any]) -> sa.BindParameter[Any]:
        return sa.bindparam(name, type_=column.type)

    repo_id, name, now = _repo(), _name(), sa.bindparam("p_now", type_=sa.Float)
    new = bind("p_new", commits.c.id)
    writes: list[Any] = []
    if nodes:
        arrays = (
            sa.func.unnest(
                sa.bindparam("b_hashes", type_=ByteaArray()),
                sa.bindparam("b_kinds", type_=ARRAY(sa.String)),
                sa.bindparam("b_datas", type_=ByteaArray()),
            )
            .table_valued("h", "k", "d")
            .render_derived()
        )
        rows = sa.select(repo_id, arrays.c.h, arrays.c.k, arrays.c.d, now).select_from(arrays)
        ins = dia.dialect_insert(blobs, "postgresql").from_select(
            ["repo_id", "hash", "kind", "data", "created_at"], rows
        )
        # a node written again refreshes created_at (gc's grace period; see put_blobs_in)
        ins = ins.on_conflict_do_update(
            index_elements=[blobs.c.repo_id, blobs.c.hash],
            set_={"created_at": ins.excluded.created_at},
        )
        writes.append(ins)
    writes.append(
        sa.insert(commits).values(
            repo_id=repo_id,
            id=new,
            parent_id=bind("c_parent", commits.c.parent_id),
            merge_parent_id=bind("c_merge", commits.c.merge_parent_id),
            root_hash=bind("c_root", commits.c.root_hash),
            changes_hash=bind("c_changes", commits.c.changes_hash),
            author=bind("c_author", commits.c.author),
            message=bind("c_message", commits.c.message),
            meta=bind("c_meta", commits.c.meta),
            created_at=now,
            generation=bind("c_generation", commits.c.generation),
        )
    )
    writes.append(
        sa.insert(reflog).values(
            repo_id=repo_id,
            name=name,
            action=bind("c_action", reflog.c.action),
            old_commit=bind("p_base", refs.c.commit_id),
            new_commit=new,
            author=bind("c_author", commits.c.author),
            at=now,
            message=bind("c_message", commits.c.message),
        )
    )
    if key:
        record = dia.dialect_insert(commit_keys, "postgresql").values(
            repo_id=repo_id,
            branch=name,
            key=bind("p_key", commit_keys.c.key),
            commit_id=new,
            created_at=now,
        )
        # a stale key (its commit is no longer on the branch: see .keys) is recorded anew
        record = record.on_conflict_do_update(
            index_elements=list(commit_keys.primary_key.columns),
            set_={"commit_id": record.excluded.commit_id, "created_at": record.excluded.created_at},
        )
        writes.append(record)
    if session:
        writes += [_CLOSE_SESSION.values(commit_id=new), _DROP_STAGED, _DROP_READS]
    moved = (
        sa.update(refs)
        .where(*_branch(repo_id, name), refs.c.commit_id == bind("p_base", refs.c.commit_id))
        .values(commit_id=new, updated_at=now)
        .returning(refs.c.name)
        .cte("zl_moved")
    )
    q = sa.select(sa.func.count().label("moved")).select_from(moved)
    for i, stmt in enumerate(writes):
        q = q.add_cte(stmt.cte(f"zl_w{i}"))
    return Prepared(q)


def pg_values(
    repo_id: int,
    branch: str,
    base: str,
    row: CommitRecord,
    now: float,
    *,
    new_blobs: dict[bytes, tuple[str, bytes]],
    action: str,
    session_id: str | None,
    idempotency_key: str | None,
) -> dict[str, Any]:
    """The bound values of :func:`pg_publish`."""
    return {
        "p_repo": repo_id,
        "p_branch": branch,
        "p_base": base,
        "p_new": row.id,
        "p_now": now,
        "p_key": idempotency_key,
        "p_session": session_id,
        "b_hashes": list(new_blobs),
        "b_kinds": [k for k, _ in new_blobs.values()],
        "b_datas": [d for _, d in new_blobs.values()],
        "c_parent": row.parent_id,
        "c_merge": row.merge_parent_id,
        "c_root": row.root_hash,
        "c_changes": row.changes_hash,
        "c_author": row.author,
        "c_message": row.message,
        "c_meta": json.dumps(row.meta),
        "c_generation": row.generation,
        "c_action": action,
    }
