"""Commits: lookups, history walks, and the one function that inserts a commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.publish as pub
from zarrlake.catalog.gc import GcQueries
from zarrlake.catalog.refs import RefQueries
from zarrlake.catalog.rows import COMMIT_COLS, CommitRow, batches, commit_row
from zarrlake.catalog.schema import blobs, commit_keys, commits, refs
from zarrlake.catalog.sessions import SessionQueries, refuse_session
from zarrlake.errors import NotFoundError
from zarrlake.faults import crash_point

__all__ = ["CommitQueries"]


class CommitQueries(RefQueries, SessionQueries, GcQueries):
    def get_commit(self, repo_id: int, commit_id: str) -> CommitRow:
        with self.read() as conn:
            row = conn.execute(
                sa.select(*COMMIT_COLS).where(
                    commits.c.repo_id == repo_id, commits.c.id == commit_id
                )
            ).first()
        if row is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return commit_row(row)

    def lookup(self, repo_id: int, name: str, *, prefix: bool) -> list[tuple[str, str]]:
        """What ``name`` may mean, in one round trip: ``("ref", commit)`` if a branch or tag
        has that name, and up to two ``("commit", id)`` whose id starts with it (if
        ``prefix``)."""
        q: Any = sa.select(sa.literal("ref").label("what"), refs.c.commit_id.label("id")).where(
            refs.c.repo_id == repo_id, refs.c.name == name
        )
        if prefix:
            by_id = (
                sa.select(sa.literal("commit").label("what"), commits.c.id.label("id"))
                .where(commits.c.repo_id == repo_id, commits.c.id.startswith(name, autoescape=True))
                .limit(2)
            )
            q = sa.union_all(q, by_id.subquery().select())
        with self.read() as conn:
            return [(str(r.what), str(r.id)) for r in conn.execute(q)]

    def get_commit_and_blob(self, repo_id: int, commit_id: str) -> tuple[CommitRow, bytes | None]:
        """A commit and its snapshot root's bytes, in one round trip."""
        q = (
            sa.select(*COMMIT_COLS, blobs.c.data.label("root_data"))
            .select_from(commits)
            .outerjoin(
                blobs, sa.and_(blobs.c.repo_id == repo_id, blobs.c.hash == commits.c.root_hash)
            )
            .where(commits.c.repo_id == repo_id, commits.c.id == commit_id)
        )
        with self.read() as conn:
            row = conn.execute(q).first()
        if row is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return commit_row(row), None if row.root_data is None else bytes(row.root_data)

    def commits_with_prefix(self, repo_id: int, prefix: str, limit: int = 2) -> list[str]:
        with self.read() as conn:
            return [
                r[0]
                for r in conn.execute(
                    sa.select(commits.c.id)
                    .where(
                        commits.c.repo_id == repo_id,
                        commits.c.id.startswith(prefix, autoescape=True),
                    )
                    .limit(limit)
                )
            ]

    def ancestry(self, repo_id: int, head: str, limit: int | None = None) -> list[CommitRow]:
        """``head`` and its first-parent ancestors, newest first (one recursive query)."""
        base = sa.select(*COMMIT_COLS).where(commits.c.repo_id == repo_id, commits.c.id == head)
        chain = base.cte("chain", recursive=True)
        step = sa.select(*COMMIT_COLS).join(
            chain, sa.and_(commits.c.repo_id == repo_id, commits.c.id == chain.c.parent_id)
        )
        chain = chain.union_all(step)
        q = sa.select(chain).order_by(chain.c.generation.desc())
        if limit is not None:
            q = q.limit(limit)
        with self.read() as conn:
            return [commit_row(r) for r in conn.execute(q)]

    def commits_between(self, repo_id: int, base: str, head: str) -> list[CommitRow] | None:
        """First-parent commits after ``base`` up to ``head`` (oldest first).

        ``None`` if ``base`` is not a first-parent ancestor of ``head`` (the branch was reset).
        """
        if base == head:
            return []
        with self.read() as conn:
            gen = conn.execute(
                sa.select(commits.c.generation).where(
                    commits.c.repo_id == repo_id, commits.c.id == base
                )
            ).scalar()
        if gen is None:
            return None
        out: list[CommitRow] = []
        cursor: str | None = head
        # Walk in pages: the distance is usually a handful of commits.
        while cursor is not None:
            page = self.ancestry(repo_id, cursor, limit=256)
            for row in page:
                if row.id == base:
                    out.reverse()
                    return out
                if row.generation <= gen:
                    return None
                out.append(row)
            cursor = page[-1].parent_id if page else None
        return None

    # -- refs ----------------------------------------------------------------------------------

    def nth_ancestor(self, repo_id: int, commit_id: str, n: int) -> str | None:
        """The ``n``-th first-parent ancestor of a commit (walks ``n`` steps, no further)."""
        base = sa.select(
            commits.c.id, commits.c.parent_id, sa.literal_column("0").label("depth")
        ).where(commits.c.repo_id == repo_id, commits.c.id == commit_id)
        chain = base.cte("nth", recursive=True)
        step = (
            sa.select(commits.c.id, commits.c.parent_id, (chain.c.depth + 1).label("depth"))
            .join(chain, sa.and_(commits.c.repo_id == repo_id, commits.c.id == chain.c.parent_id))
            .where(chain.c.depth < n)
        )
        chain = chain.union_all(step)
        with self.read() as conn:
            return conn.execute(sa.select(chain.c.id).where(chain.c.depth == n)).scalar()

    def commit_graph(
        self, repo_id: int, heads: Sequence[str], min_generation: int
    ) -> dict[str, tuple[str | None, str | None, int]]:
        """Commits reachable from ``heads`` through both parents, down to ``min_generation``:
        id -> (parent, merge parent, generation). One recursive query."""
        cols = [commits.c.id, commits.c.parent_id, commits.c.merge_parent_id, commits.c.generation]
        base = sa.select(*cols).where(commits.c.repo_id == repo_id, commits.c.id.in_(list(heads)))
        graph = base.cte("graph", recursive=True)
        step = (
            sa.select(*cols)
            .join(
                graph,
                sa.and_(
                    commits.c.repo_id == repo_id,
                    sa.or_(
                        commits.c.id == graph.c.parent_id,
                        commits.c.id == graph.c.merge_parent_id,
                    ),
                ),
            )
            .where(commits.c.generation >= min_generation)
        )
        graph = graph.union(step)
        with self.read() as conn:
            return {
                r.id: (r.parent_id, r.merge_parent_id, int(r.generation))
                for r in conn.execute(sa.select(graph))
            }

    def graph_nodes(
        self, repo_id: int, heads: Sequence[str]
    ) -> dict[str, tuple[tuple[str, ...], float]]:
        """Every commit reachable from ``heads`` through both parents: id -> (parents,
        creation time). One recursive query; a parent that was expired is left out."""
        cols = [commits.c.id, commits.c.parent_id, commits.c.merge_parent_id, commits.c.created_at]
        base = sa.select(*cols).where(commits.c.repo_id == repo_id, commits.c.id.in_(list(heads)))
        graph = base.cte("graph", recursive=True)
        step = sa.select(*cols).join(
            graph,
            sa.and_(
                commits.c.repo_id == repo_id,
                sa.or_(
                    commits.c.id == graph.c.parent_id,
                    commits.c.id == graph.c.merge_parent_id,
                ),
            ),
        )
        graph = graph.union(step)
        with self.read() as conn:
            return {
                r.id: (tuple(p for p in (r.parent_id, r.merge_parent_id) if p), float(r.created_at))
                for r in conn.execute(sa.select(graph))
            }

    def commits_by_id(self, repo_id: int, ids: Sequence[str]) -> dict[str, CommitRow]:
        """The commits of ``ids`` that exist, by id."""
        out: dict[str, CommitRow] = {}
        for batch in batches(list(ids)):
            with self.read() as conn:
                for r in conn.execute(
                    sa.select(*COMMIT_COLS).where(
                        commits.c.repo_id == repo_id, commits.c.id.in_(list(batch))
                    )
                ):
                    row = commit_row(r)
                    out[row.id] = row
        return out

    def all_commits(self, repo_id: int) -> list[CommitRow]:
        """Every commit of a repo (for gc, expire and fsck)."""
        with self.read() as conn:
            return [
                commit_row(r)
                for r in conn.execute(sa.select(*COMMIT_COLS).where(commits.c.repo_id == repo_id))
            ]

    def recorded_key(self, repo_id: int, branch: str, key: str) -> str | None:
        """The commit recorded on ``branch`` with idempotency ``key``, if any."""
        with self.read() as conn:
            return _recorded_key(conn, repo_id, branch, key)

    def insert_commit(
        self,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        *,
        session_id: str | None = None,
        require: Sequence[str] = (),
        action: str = "commit",
        idempotency_key: str | None = None,
    ) -> str | None:
        """Insert a commit and move ``branch`` from ``base`` to it, in one transaction.

        Every commit (a session's, a merge's, a revert's) goes through here.

        Parameters
        ----------
        session_id
            The session committing: it must be open and unexpired, must not stage objects
            that garbage collection is deleting, and is closed in the same transaction.
        require
            Commits the new one was built from (merges, reverts): they must still exist
            (``expire`` may have dropped one); their rows are share-locked until the end.
        action
            What the ref log records.
        idempotency_key
            If a commit with this key is already on the branch, commit nothing and return it.

        Returns
        -------
        The id of the commit now on the branch for this call (``row.id``, or the commit
        recorded with ``idempotency_key``); ``None`` if the branch is no longer at ``base``.
        """
        pg = self.dialect != "sqlite"
        values = pub.params(repo_id, branch, session_id, idempotency_key)
        with self.tx(write=True) as conn:
            q = pub.preflight(
                self.dialect,
                session_id is not None,
                not pg,
                not pg and idempotency_key is not None,
            )
            pre = conn.execute(q, values).one()
            now = float(pre.now)
            self.refuse_identity(pre.catalog_id, pre.schema_version)
            if session_id is not None:
                refuse_session(session_id, pre.status, pre.expires_at, now)
            if require:
                self._lock_required(conn, repo_id, require)
            # The branch row is locked before the key is looked up, so two commits with one
            # key are serialized and the second sees the key the first recorded (PostgreSQL
            # reads it by a statement that starts once the lock is held; SQLite's writing
            # transaction excluded every other writer before the first statement).
            locked: sa.Row[Any] | None = pre
            if pg:
                locked = conn.execute(pub.lock_head(session_id is not None), values).first()
            if locked is None or locked.head is None:
                raise NotFoundError(f"branch {branch!r} no longer exists")
            if session_id is not None and locked.claims:
                self.refuse_swept_hits(conn, repo_id, session_id)
            if pg:
                done = _recorded_key(conn, repo_id, branch, idempotency_key)
            else:
                done = None if idempotency_key is None else locked.recorded
            if done is None:
                if locked.head != base:
                    return None
                if pg:
                    self._publish_pg(
                        conn,
                        repo_id,
                        branch,
                        base,
                        row,
                        new_blobs,
                        now,
                        action=action,
                        session_id=session_id,
                        idempotency_key=idempotency_key,
                    )
                    crash_point("commit.in_tx")
                    return row.id
                self._publish_sqlite(
                    conn,
                    repo_id,
                    branch,
                    base,
                    row,
                    new_blobs,
                    now,
                    action=action,
                    idempotency_key=idempotency_key,
                )
                done = row.id
            crash_point("commit.in_tx")
            if session_id is not None:
                close = {"p_session": session_id, "p_commit": done}
                conn.execute(pub.CLOSE_SESSION, close)
                conn.execute(pub.DROP_STAGED, close)
                if pg or pre.has_reads:
                    conn.execute(pub.DROP_READS, close)
            return str(done)

    def _publish_pg(
        self,
        conn: sa.Connection,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        now: float,
        *,
        action: str,
        session_id: str | None,
        idempotency_key: str | None,
    ) -> None:
        q = pub.pg_publish(bool(new_blobs), idempotency_key is not None, session_id is not None)
        values = pub.pg_values(
            repo_id,
            branch,
            base,
            row,
            now,
            new_blobs=new_blobs,
            action=action,
            session_id=session_id,
            idempotency_key=idempotency_key,
        )
        moved = conn.execute(q, values).scalar_one()
        assert moved == 1, "the branch row is locked by this transaction"

    def _publish_sqlite(
        self,
        conn: sa.Connection,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        now: float,
        *,
        action: str,
        idempotency_key: str | None,
    ) -> None:
        self.put_blobs_in(conn, repo_id, new_blobs, now)
        conn.execute(pub.INSERT_COMMIT, pub.commit_values(repo_id, row, now))
        moved = conn.execute(
            pub.MOVE_BRANCH,
            {"p_repo": repo_id, "p_branch": branch, "p_base": base, "p_new": row.id, "p_now": now},
        )
        assert moved.rowcount == 1, "the branch row is locked by this transaction"
        conn.execute(pub.INSERT_REFLOG, pub.reflog_values(repo_id, branch, action, base, row, now))
        if idempotency_key is not None:
            conn.execute(
                pub.INSERT_KEY,
                {
                    "repo_id": repo_id,
                    "branch": branch,
                    "key": idempotency_key,
                    "commit_id": row.id,
                    "created_at": now,
                },
            )

    @staticmethod
    def _lock_required(conn: sa.Connection, repo_id: int, require: Sequence[str]) -> None:
        need = sorted(set(require))
        found = set(
            conn.execute(
                sa.select(commits.c.id)
                .where(commits.c.repo_id == repo_id, commits.c.id.in_(need))
                .with_for_update(read=True)
            ).scalars()
        )
        missing = [c for c in need if c not in found]
        if missing:
            raise NotFoundError(
                f"commit(s) {', '.join(missing)} no longer exist (expired meanwhile?)"
            )


def _recorded_key(conn: sa.Connection, repo_id: int, branch: str, key: str | None) -> str | None:
    if key is None:
        return None
    found = conn.execute(
        sa.select(commit_keys.c.commit_id).where(
            commit_keys.c.repo_id == repo_id,
            commit_keys.c.branch == branch,
            commit_keys.c.key == key,
        )
    ).scalar()
    return None if found is None else str(found)
