"""Sessions, their staged changes and (serializable sessions) what they read."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.batches import stage_batches
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx, Prepared
from zarrlake.catalog.interface import StagedAsk
from zarrlake.catalog.nodes import put_nodes
from zarrlake.catalog.rows import (
    Read,
    bound_head_query,
    commit_record,
    coords_text,
    prepared_head,
    read_values,
    reads_from,
    session_record,
    staged_entry,
    staged_values,
)
from zarrlake.catalog.schema import reads, sessions, staged
from zarrlake.errors import NotFoundError, SessionClosedError, SessionExpiredError
from zarrlake.faults import crash_point
from zarrlake.model.records import CommitRecord, SessionRecord, StagedEntry, StagedKind
from zarrlake.model.virtual import VirtualSource
from zarrlake.types import ChunkCoords, SessionInfo

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
def _session_now(dialect: str) -> Prepared:
    """A session's row and the catalog's clock (built once; ``s_id`` and ``s_repo`` bound at
    execution)."""
    return Prepared(
        sa.select(sessions, dia.now_column(dialect)).where(
            sessions.c.id == sa.bindparam("s_id", type_=sessions.c.id.type),
            sessions.c.repo_id == sa.bindparam("s_repo", type_=sa.Integer),
        )
    )


class SessionQueries(Scoped):
    """A repo's sessions and what they stage."""

    def create(
        self, session_id: str, branch: str, author: str, isolation: str, expires_in: float
    ) -> tuple[SessionRecord, CommitRecord]:
        """Open a session on the head of ``branch``; returns it and its base commit.

        On PostgreSQL one statement reads the head and inserts the session (a data-modifying
        ``WITH``), sent outside an explicit transaction: one round trip instead of four
        (BEGIN, the read, the insert, COMMIT). SQLite, which has no such ``WITH``, runs the
        two statements in one transaction, in process."""
        if self.db.dialect != "sqlite":
            with self.db.tx(single=True) as conn:
                base = conn.execute(
                    _open_session_pg(),
                    {
                        "h_repo": self.repo_id,
                        "h_branch": branch,
                        "s_id": session_id,
                        "s_author": author,
                        "s_isolation": isolation,
                        "s_expires_in": expires_in,
                    },
                ).first()
        else:
            with self.db.tx(write=True) as conn:
                q = prepared_head(self.db.dialect)
                base = conn.execute(q, {"h_repo": self.repo_id, "h_branch": branch}).first()
                if base is not None:
                    conn.execute(
                        _INSERT_SESSION,
                        {
                            "id": session_id,
                            "repo_id": self.repo_id,
                            "branch": branch,
                            "base_commit": base.id,
                            "author": author,
                            "isolation": isolation,
                            "status": "open",
                            "created_at": float(base.now),
                            "expires_at": float(base.now) + expires_in,
                            "commit_id": None,
                        },
                    )
        if base is None:
            raise NotFoundError(f"no branch {branch!r}; create it with repo.create_branch()")
        now = float(base.now)
        record = SessionRecord(
            session_id, branch, base.id, author, isolation, "open", now, now + expires_in, None
        )
        return record, commit_record(base)

    def _row(self, conn: DriverTx, session_id: str) -> tuple[SessionRecord, float]:
        row = conn.execute(
            _session_now(self.db.dialect), {"s_id": session_id, "s_repo": self.repo_id}
        ).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r} in this repo")
        return session_record(row), float(row.now)

    def get(self, session_id: str) -> SessionRecord:
        return self.get_with_clock(session_id)[0]

    def get_with_clock(self, session_id: str) -> tuple[SessionRecord, float]:
        """A session as the catalog records it, and the catalog's clock (one query)."""
        with self.db.read() as conn:
            return self._row(conn, session_id)

    def infos(self, include_closed: bool = False) -> list[SessionInfo]:
        """The repo's sessions, oldest first, each with its status at the catalog's clock:
        those not closed (``open`` or ``expired``), or every one with ``include_closed``."""
        q = sa.select(sessions, dia.now_column(self.db.dialect)).where(
            sessions.c.repo_id == self.repo_id
        )
        if not include_closed:
            q = q.where(sessions.c.status == "open")
        # SQLite's clock has millisecond steps, and a session opens in less: sessions opened
        # in one step are ordered by insertion (writes are serialized, so it is their order)
        tie = (
            sa.literal_column("zl_sessions.rowid") if self.db.dialect == "sqlite" else sessions.c.id
        )
        with self.db.read() as conn:
            rows = conn.execute(q.order_by(sessions.c.created_at, tie)).all()
        return [session_record(r).info(float(r.now)) for r in rows]

    def check(self, conn: DriverTx, session_id: str) -> tuple[SessionRecord, float]:
        """The session, refused unless open and unexpired, and the catalog's clock."""
        s, now = self._row(conn, session_id)
        refuse_session(session_id, s.status, s.expires_at, now)
        return s, now

    def update(self, session_id: str, **values: Any) -> SessionRecord:
        """Change an open session (expiry, base commit, status) after checking it is usable."""
        extend_by = values.pop("extend_by", None)
        max_life = values.pop("max_life", None)
        with self.db.tx(write=True) as conn:
            s, now = self.check(conn, session_id)
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
            return session_record(row)

    def close_as(self, session_id: str, commit_id: str) -> None:
        """Record an open session as committed by ``commit_id`` (a commit that landed before,
        with the session's idempotency key)."""
        self.update(session_id, status="committed", commit_id=commit_id)

    # -- staged changes ------------------------------------------------------------------------

    def stage(
        self,
        session_id: str,
        entries: Sequence[StagedEntry],
        drops: Iterable[str] = (),
        *,
        blobs: dict[bytes, tuple[str, bytes]] | None = None,
        reads_: Sequence[Read] = (),
    ) -> None:
        """Record writes (node drops, then entries), the metadata documents they reference
        and reads (serializable sessions) in an open, unexpired session, in one transaction."""
        drops = list(drops)
        with self.db.tx(write=True) as conn:
            _, now = self.check(conn, session_id)
            if blobs:
                put_nodes(conn, self.repo_id, blobs, now)
            if reads_:
                conn.execute(self.db.insert_read, read_values(session_id, reads_))
            for path in drops:
                # A dropped node loses everything staged for it before the drop, including
                # keys staged raw under it (chunks written before the node existed).
                under = staged.c.key.startswith(f"{path}/", autoescape=True) if path else sa.true()
                conn.execute(
                    sa.delete(staged).where(
                        staged.c.session_id == session_id,
                        sa.or_(
                            sa.and_(
                                staged.c.path == path,
                                staged.c.kind.in_(("meta", "chunk", "vrefs", "vshape")),
                            ),
                            sa.and_(staged.c.path == "", staged.c.kind == "raw", under),
                        ),
                    )
                )
            if drops:
                conn.execute(
                    self.db.upsert_staged,
                    staged_values(session_id, [StagedEntry(p, "drop") for p in drops]),
                )
            # in order: a chunk staged before a batch that covers it goes, one after stays
            for is_batch, run in itertools.groupby(entries, lambda e: e.kind == "vrefs"):
                if is_batch:
                    stage_batches(conn, session_id, list(run), self._write_staged)
                else:
                    self._write_staged(conn, staged_values(session_id, list(run)))
            crash_point("stage.in_tx")

    def _write_staged(self, conn: DriverTx, rows: list[dict[str, Any]]) -> None:
        conn.execute(self.db.upsert_staged, rows)

    def replace_staged(self, session_id: str, entries: Sequence[StagedEntry], base: str) -> None:
        """Replace all staged entries of a session and move its base (after a rebase)."""
        with self.db.tx(write=True) as conn:
            self.check(conn, session_id)
            conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
            conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            if entries:
                conn.execute(self.db.upsert_staged, staged_values(session_id, entries))
            conn.execute(
                sa.update(sessions).where(sessions.c.id == session_id).values(base_commit=base)
            )
            crash_point("rebase.in_tx")

    def load_staged(
        self, session_id: str, kinds: Sequence[StagedKind] | None = None
    ) -> list[StagedEntry]:
        return list(self.iter_staged(session_id, kinds))

    def iter_staged(
        self, session_id: str, kinds: Sequence[StagedKind] | None = None
    ) -> Iterator[StagedEntry]:
        """The staged entries of a session, as a stream (one read transaction, held until
        the stream ends): a caller that keeps less than every entry holds less."""
        if kinds is None:
            q: Any = _ALL_STAGED
        else:
            q = sa.select(staged).where(
                staged.c.session_id == sa.bindparam("p_sid"), staged.c.kind.in_(kinds)
            )
        with self.db.read() as conn:
            sources: dict[str, VirtualSource] = {}
            for r in conn.execute(q, {"p_sid": session_id}):
                yield staged_entry(r, sources)

    def get_staged(
        self,
        session_id: str,
        path: str,
        kind: StagedKind,
        coords: ChunkCoords = (),
        key: str = "",
        raw_key: str | None = None,
        batch: ChunkCoords | None = None,
    ) -> dict[str, StagedEntry]:
        """The staged entry of one key (a node's ``meta``, a ``chunk`` at ``coords``, or a
        ``raw`` ``key``) and the node's drop marker, by kind; with ``raw_key``, also the raw
        entry of that store key (a chunk written before its array); the shard shape of the
        node's batches of virtual references (``vshape``), and with ``batch``, the batch
        staged at that shard position."""
        text = coords_text(coords) if kind == "chunk" else key
        params = {"p_sid": session_id, "p_path": path, "p_kind": kind, "p_key": text}
        if batch is not None:
            params["p_batch"] = coords_text(batch)
        if raw_key is not None:
            params["p_raw"] = raw_key
        q = _GET_STAGED[raw_key is not None, batch is not None]
        with self.db.read() as conn:
            rows = conn.execute(q, params).all()
        return {r.kind: staged_entry(r) for r in rows}

    def get_staged_many(
        self, session_id: str, asks: Sequence[StagedAsk]
    ) -> list[dict[str, StagedEntry]]:
        """:meth:`get_staged` of each of ``asks``, in one statement (of one shape for any
        number of asks up to :data:`_MANY`; more take one statement per :data:`_MANY`)."""
        out: list[dict[str, StagedEntry]] = []
        for start in range(0, len(asks), _MANY):
            part = asks[start : start + _MANY]
            params: dict[str, Any] = {"p_sid": session_id}
            for i, (path, kind, coords, key, raw_key, batch) in enumerate(part):
                params[f"p_path{i}"] = path
                params[f"p_kind{i}"] = kind
                params[f"p_key{i}"] = coords_text(coords) if kind == "chunk" else key
                params[f"p_raw{i}"] = raw_key  # None: no raw row is asked for
                params[f"p_batch{i}"] = None if batch is None else coords_text(batch)
            found: list[dict[str, StagedEntry]] = [{} for _ in part]
            with self.db.read() as conn:
                for r in conn.execute(_get_staged_many(len(part)), params):
                    found[r[-1]][r.kind] = staged_entry(tuple(r)[:-1])
            out += found
        return out

    def record_reads(self, session_id: str, items: Iterable[Read]) -> None:
        values = read_values(session_id, items)
        if not values:
            return
        with self.db.tx(write=True) as conn:
            conn.execute(self.db.insert_read, values)

    def load_reads(
        self, session_id: str
    ) -> tuple[frozenset[tuple[str, ChunkCoords | None]], frozenset[str]]:
        """What a serializable session recorded as read: (nodes and chunks, raw keys)."""
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(reads.c.path, reads.c.key).where(reads.c.session_id == session_id)
            ).all()
        return reads_from((r.path, r.key) for r in rows)


# Statements built once (the values go as parameters): building one costs more than running it.
_INSERT_SESSION = Prepared(sa.insert(sessions))
_ALL_STAGED = Prepared(sa.select(staged).where(staged.c.session_id == sa.bindparam("p_sid")))


@functools.cache
def _open_session_pg() -> Prepared:
    """The head of ``h_branch`` (as :func:`bound_head_query`, with the clock), and a new open
    session on it inserted by the same statement; no row (and no session) if there is no
    such branch.

    Its transaction does not wait for the WAL to reach the disk (``synchronous_commit`` off
    for this transaction alone: about 0.3 ms here). The session's row becomes durable with
    the first durable transaction after it, since the WAL is flushed in order: the first
    staged batch, or the commit. A server crash before then loses only a session that holds
    nothing: its process is told there is no such session when it stages or commits."""
    head = bound_head_query("postgresql").cte("zl_head")

    def bind(name: str, column: sa.Column[Any]) -> sa.BindParameter[Any]:
        return sa.bindparam(name, type_=column.type)

    created = sa.select(
        bind("s_id", sessions.c.id),
        bind("h_repo", sessions.c.repo_id),
        bind("h_branch", sessions.c.branch),
        head.c.id,
        bind("s_author", sessions.c.author),
        bind("s_isolation", sessions.c.isolation),
        sa.literal("open", sessions.c.status.type),
        head.c.now,
        head.c.now + sa.bindparam("s_expires_in", type_=sa.Float),
        sa.null(),
    )
    insert = sa.insert(sessions).from_select(
        ["id", "repo_id", "branch", "base_commit", "author", "isolation", "status",
         "created_at", "expires_at", "commit_id"],
        created,
    )  # fmt: skip
    not_flushed = sa.func.set_config("synchronous_commit", "off", True).label("unflushed")
    return Prepared(sa.select(head, not_flushed).add_cte(insert.cte("zl_opened")))


def _staged_condition(suffix: str, raw: bool, batch: bool) -> Any:
    """The rows of one key's staged lookup (parameters named ``p_path{suffix}`` and so on):
    its own row, the node's drop marker and batch shape, with ``batch`` the batch at its
    shard position, with ``raw`` the raw row of its store key (a chunk written before its
    array)."""

    def p(name: str) -> Any:
        return sa.bindparam(f"{name}{suffix}")

    alternatives = [
        sa.and_(staged.c.kind == p("p_kind"), staged.c.key == p("p_key")),
        # not IN (...): a list is expanded at execution, which Prepared cannot
        sa.or_(staged.c.kind == "drop", staged.c.kind == "vshape"),
    ]
    if batch:
        alternatives.append(sa.and_(staged.c.kind == "vrefs", staged.c.key == p("p_batch")))
    this = sa.and_(staged.c.path == p("p_path"), sa.or_(*alternatives))
    if raw:
        this = sa.or_(
            this, sa.and_(staged.c.path == "", staged.c.kind == "raw", staged.c.key == p("p_raw"))
        )
    return sa.and_(staged.c.session_id == sa.bindparam("p_sid"), this)


_GET_STAGED = {
    (raw, batch): Prepared(sa.select(staged).where(_staged_condition("", raw, batch)))
    for raw in (False, True)
    for batch in (False, True)
}

_MANY = 64  # asks per statement of get_staged_many


@functools.lru_cache(maxsize=_MANY)
def _get_staged_many(n: int) -> Prepared:
    """The staged lookups of ``n`` keys at once: one arm per key (its parameters suffixed by
    its number; a key asking for no raw row or batch passes None there), each row tagged
    with the number of the key it answers."""

    def arm(i: int) -> Any:
        tag: Any = sa.literal_column(str(i)).label("ask")
        return sa.select(*staged.c, tag).where(_staged_condition(str(i), True, True))

    return Prepared(arm(0) if n == 1 else sa.union_all(*(arm(i) for i in range(n))))
