"""Sessions, their staged changes and (serializable sessions) what they read."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.base import CatalogBase
from zarrlake.catalog.rows import (
    CommitRow,
    SessionRow,
    StagedRow,
    bound_head_query,
    commit_row,
    session_row,
    staged_row,
    staged_values,
)
from zarrlake.catalog.schema import reads, sessions, staged
from zarrlake.errors import NotFoundError, SessionClosedError, SessionExpiredError
from zarrlake.faults import crash_point
from zarrlake.types import SessionInfo

__all__ = ["SessionQueries", "refuse_session"]


def refuse_session(
    session_id: str, status: str | None, expires_at: float | None, now: float
) -> None:
    """Refuse a session that is missing (``status`` None), closed or expired at ``now``."""
    if status is None or expires_at is None:
        raise NotFoundError(f"no session {session_id!r}")
    if status != "open":
        raise SessionClosedError(
            f"session {session_id} is {status}; open a new session with repo.writable_session()"
        )
    if now >= expires_at:
        raise SessionExpiredError(
            f"session {session_id} expired {now - expires_at:.1f} s ago; its writes cannot be "
            "committed. Open a new session (and extend long ones with session.extend())"
        )


@functools.cache
def _session_now(dialect: str) -> sa.Select[Any]:
    """A session's row and the catalog's clock (built once; ``s_id`` bound at execution)."""
    return sa.select(sessions, dia.now_column(dialect)).where(
        sessions.c.id == sa.bindparam("s_id", type_=sessions.c.id.type)
    )


class SessionQueries(CatalogBase):
    def create_session(
        self,
        repo_id: int,
        session_id: str,
        branch: str,
        author: str,
        isolation: str,
        expires_in: float,
    ) -> tuple[SessionRow, CommitRow]:
        """Open a session on the head of ``branch``; returns it and its base commit."""
        with self.tx(write=True) as conn:
            q = bound_head_query(self.dialect)
            base = conn.execute(q, {"h_repo": repo_id, "h_branch": branch}).first()
            if base is None:
                raise NotFoundError(f"no branch {branch!r}; create it with repo.create_branch()")
            head = base.id
            now = float(base.now)
            values = {
                "id": session_id,
                "repo_id": repo_id,
                "branch": branch,
                "base_commit": head,
                "author": author,
                "isolation": isolation,
                "status": "open",
                "created_at": now,
                "expires_at": now + expires_in,
                "commit_id": None,
            }
            conn.execute(sa.insert(sessions).values(**values))
            return SessionRow(**values), commit_row(base)

    def get_session(self, session_id: str) -> SessionRow:
        with self.read() as conn:
            row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}")
        return session_row(row)

    def session_and_clock(self, session_id: str) -> tuple[SessionRow, float]:
        """A session as the catalog records it, and the catalog's clock (one query)."""
        with self.read() as conn:
            row = conn.execute(_session_now(self.dialect), {"s_id": session_id}).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}")
        return session_row(row), float(row.now)

    def list_sessions(self, repo_id: int, include_closed: bool = False) -> list[SessionInfo]:
        """A repo's sessions, oldest first, each with its status at the catalog's clock: those
        not closed (``open`` or ``expired``), or every one with ``include_closed``."""
        q = sa.select(sessions, dia.now_column(self.dialect)).where(sessions.c.repo_id == repo_id)
        if not include_closed:
            q = q.where(sessions.c.status == "open")
        with self.read() as conn:
            rows = conn.execute(q.order_by(sessions.c.created_at, sessions.c.id)).all()
        return [session_row(r).info(float(r.now)) for r in rows]

    def check_session(self, conn: sa.Connection, session_id: str) -> tuple[SessionRow, float]:
        """The session, refused unless open and unexpired, and the catalog's clock (one
        query)."""
        row = conn.execute(_session_now(self.dialect), {"s_id": session_id}).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}")
        s, now = session_row(row), float(row.now)
        refuse_session(session_id, s.status, s.expires_at, now)
        return s, now

    def update_session(self, session_id: str, **values: Any) -> SessionRow:
        """Change an open session (expiry, base commit, status) after checking it is usable."""
        extend_by = values.pop("extend_by", None)
        max_life = values.pop("max_life", None)
        with self.tx(write=True) as conn:
            s, now = self.check_session(conn, session_id)
            if extend_by is not None:
                new_exp = now + extend_by
                if max_life is not None and new_exp - s.created_at > max_life:
                    new_exp = s.created_at + max_life
                values["expires_at"] = max(new_exp, s.expires_at)
            if not values:
                return s
            row = conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id)
                .values(**values)
                .returning(*sessions.c)
            ).one()
            if values.get("status") == "abandoned":
                conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
                conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            return session_row(row)

    # -- staged changes ------------------------------------------------------------------------

    def stage(
        self,
        session_id: str,
        rows: Sequence[StagedRow],
        drops: Iterable[str] = (),
        *,
        blobs: dict[bytes, tuple[str, bytes]] | None = None,
        reads: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Record writes (node drops, then rows), the metadata documents they reference and
        reads (serializable sessions) in an open, unexpired session, in one transaction."""
        drops = list(drops)
        with self.tx(write=True) as conn:
            s, now = self.check_session(conn, session_id)
            if blobs:
                self.put_blobs_in(conn, s.repo_id, blobs, now)
            if reads:
                conn.execute(
                    self.insert_read,
                    [{"session_id": session_id, "path": p, "key": k} for p, k in reads],
                )
            for path in drops:
                # A dropped node loses everything staged for it before the drop, including
                # keys staged raw under it (chunks written before the node existed).
                under = staged.c.key.startswith(f"{path}/", autoescape=True) if path else sa.true()
                conn.execute(
                    sa.delete(staged).where(
                        staged.c.session_id == session_id,
                        sa.or_(
                            sa.and_(staged.c.path == path, staged.c.kind.in_(("meta", "chunk"))),
                            sa.and_(staged.c.path == "", staged.c.kind == "raw", under),
                        ),
                    )
                )
            if drops:
                conn.execute(
                    self.upsert_staged,
                    [
                        {
                            "session_id": session_id,
                            "path": p,
                            "kind": "drop",
                            "key": "",
                            "hash": None,
                            "length": 0,
                            "inline": None,
                            "pack": None,
                            "pack_offset": None,
                            "crc": None,
                        }
                        for p in drops
                    ],
                )
            if rows:
                conn.execute(self.upsert_staged, staged_values(session_id, rows))
            crash_point("stage.in_tx")

    def replace_staged(self, session_id: str, rows: Sequence[StagedRow], base: str) -> None:
        """Replace all staged rows of a session and move its base (after a rebase)."""
        with self.tx(write=True) as conn:
            self.check_session(conn, session_id)
            conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
            conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            if rows:
                conn.execute(self.upsert_staged, staged_values(session_id, rows))
            conn.execute(
                sa.update(sessions).where(sessions.c.id == session_id).values(base_commit=base)
            )
            crash_point("rebase.in_tx")

    def load_staged(self, session_id: str, kinds: Sequence[str] | None = None) -> list[StagedRow]:
        q = sa.select(staged).where(staged.c.session_id == session_id)
        if kinds is not None:
            q = q.where(staged.c.kind.in_(kinds))
        with self.read() as conn:
            return [staged_row(r) for r in conn.execute(q)]

    def get_staged(
        self,
        session_id: str,
        path: str,
        kinds: Sequence[str],
        key: str,
        raw_key: str | None = None,
    ) -> dict[str, StagedRow]:
        """The staged rows of one key (and the node's drop marker), by kind; with
        ``raw_key``, also the raw row of that store key (a chunk written before its array)."""
        this = sa.and_(
            staged.c.path == path,
            sa.or_(
                sa.and_(staged.c.kind.in_(kinds), staged.c.key == key),
                staged.c.kind == "drop",
            ),
        )
        if raw_key is not None:
            this = sa.or_(
                this,
                sa.and_(staged.c.path == "", staged.c.kind == "raw", staged.c.key == raw_key),
            )
        with self.read() as conn:
            rows = conn.execute(
                sa.select(staged).where(staged.c.session_id == session_id, this)
            ).all()
        return {r.kind: staged_row(r) for r in rows}

    def record_reads(self, session_id: str, items: Iterable[tuple[str, str]]) -> None:
        values = [{"session_id": session_id, "path": p, "key": k} for p, k in items]
        if not values:
            return
        with self.tx(write=True) as conn:
            conn.execute(self.insert_read, values)

    def load_reads(self, session_id: str) -> list[tuple[str, str]]:
        with self.read() as conn:
            return [
                (r.path, r.key)
                for r in conn.execute(
                    sa.select(reads.c.path, reads.c.key).where(reads.c.session_id == session_id)
                )
            ]
