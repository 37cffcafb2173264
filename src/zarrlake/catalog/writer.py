"""The one writer of commits: every commit (a session's, a merge's, a revert's, a repo's
first) is inserted here, and a branch moves to it by compare-and-swap in the same transaction.

The statements are in :mod:`.publish`, both dialects' forms side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
import zarrlake.catalog.publish as pub
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.gc import refuse_swept_hits
from zarrlake.catalog.keys import recorded_key
from zarrlake.catalog.nodes import copy_staged_shards, put_nodes
from zarrlake.catalog.pulls import mark_merged
from zarrlake.catalog.refs import log_ref
from zarrlake.catalog.rows import staged_values
from zarrlake.catalog.schema import commits, refs
from zarrlake.catalog.sessions import refuse_session
from zarrlake.errors import AlreadyExistsError, CatalogError, NotFoundError, RefMovedError
from zarrlake.faults import crash_point
from zarrlake.model.records import CommitRecord, RefUpdate, StagedEntry

__all__ = ["CommitWriter", "write_first_commit"]

Nodes = dict[bytes, tuple[str, bytes]]


def write_first_commit(
    conn: DriverTx, repo_id: int, commit: CommitRecord, root: bytes, now: float
) -> None:
    """A new repo's first commit and its ``main`` branch (inside the repo's creation)."""
    put_nodes(conn, repo_id, {commit.root_hash: ("root", root)}, now)
    conn.execute(pub.INSERT_COMMIT, pub.commit_values(repo_id, commit, now))
    conn.execute(
        sa.insert(refs).values(
            repo_id=repo_id, name="main", kind="branch", commit_id=commit.id, updated_at=now
        )
    )
    log_ref(conn, repo_id, "main", "create", None, commit.id, commit.author, now, "")


class CommitWriter(Scoped):
    """Publishes commits on a repo's branches."""

    def publish_history(
        self,
        commits: Sequence[tuple[CommitRecord, Nodes]],
        updates: Sequence[RefUpdate],
        *,
        author: str,
        action: str = "import",
    ) -> None:
        """Insert whole commits made elsewhere (each with its own parents and time, parents
        first) and create or move refs to them, all in one transaction: either every commit
        and ref lands, or nothing does. A branch that is no longer at ``expected`` fails it
        with :class:`RefMovedError`, a ref to create that exists with
        :class:`AlreadyExistsError`."""
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            dia.gc_fence(conn, rid, exclusive=False)  # expire cannot drop a parent meanwhile
            now = self.db.now(conn)
            for commit, nodes in commits:
                put_nodes(conn, rid, nodes, now)
                conn.execute(pub.INSERT_COMMIT, pub.commit_values(rid, commit, commit.created_at))
            for u in updates:
                if u.expected is None:
                    kind = conn.execute(
                        sa.select(refs.c.kind).where(refs.c.repo_id == rid, refs.c.name == u.name)
                    ).scalar()
                    if kind is not None:
                        raise AlreadyExistsError(f"a {kind} named {u.name!r} already exists")
                    conn.execute(
                        sa.insert(refs).values(
                            repo_id=rid, name=u.name, kind=u.kind, commit_id=u.new, updated_at=now
                        )
                    )
                    log_ref(conn, rid, u.name, action, None, u.new, author, now, "")
                    continue
                moved = conn.execute(
                    pub.MOVE_BRANCH,
                    {"p_repo": rid, "p_branch": u.name, "p_base": u.expected, "p_new": u.new,
                     "p_now": now},
                )  # fmt: skip
                if moved.rowcount != 1:
                    raise RefMovedError(
                        f"branch {u.name!r} moved while it was being imported into; nothing "
                        "was imported, run the import again",
                        ref=u.name,
                        expected=u.expected,
                    )
                log_ref(conn, rid, u.name, action, u.expected, u.new, author, now, "")
            crash_point("commit.in_tx")

    def publish(
        self,
        branch: str,
        base: str,
        commit: CommitRecord,
        nodes: Nodes,
        *,
        session_id: str | None = None,
        staging: Sequence[StagedEntry] = (),
        staged_shards: Sequence[bytes] = (),
        require: Sequence[str] = (),
        action: str = "commit",
        idempotency_key: str | None = None,
        pull: int | None = None,
    ) -> str | None:
        """Insert a commit and move ``branch`` from ``base`` to it, in one transaction.

        Parameters
        ----------
        session_id
            The session committing: it must be open and unexpired, must not stage objects
            that garbage collection is deleting, and is closed in the same transaction.
        staging
            Rows of that session the commit includes and the session has not staged: gc's
            claims are checked against them as against its staged rows.
        staged_shards
            Hashes of batches that session staged that are new shards of the commit as they
            are: the transaction copies them into nodes (:func:`.nodes.copy_staged_shards`).
        require
            Commits the new one was built from (merges, reverts): they must still exist
            (``expire`` may have dropped one); their rows are share-locked until the end.
        action
            What the ref log records.
        idempotency_key
            If a commit with this key is on the branch (:mod:`.keys`), commit nothing and
            return it.
        pull
            The pull request this commit merges: recorded as merged in the same transaction
            (refused if it is no longer open).

        Returns
        -------
        The id of the commit now on the branch for this call (``commit.id``, or the commit
        recorded with ``idempotency_key``); ``None`` if the branch is no longer at ``base``.
        """
        db, rid = self.db, self.repo_id
        pg = db.dialect != "sqlite"
        values = pub.params(rid, branch, session_id, idempotency_key)
        with db.tx(write=True) as conn:
            pre = conn.execute(
                pub.preflight(db.dialect, session_id is not None, not pg), values
            ).one()
            now = float(pre.now)
            db.refuse_identity(pre.catalog_id, pre.schema_version)
            if session_id is not None:
                refuse_session(session_id, pre.status, pre.expires_at, now)
            if require:
                self._lock_required(conn, require)
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
                if staging:  # what gc's claims are checked against (dropped below)
                    conn.execute(db.upsert_staged, staged_values(session_id, staging))
                refuse_swept_hits(conn, rid, session_id)
            done = recorded_key(conn, rid, branch, idempotency_key, locked.head)
            if done is None:
                if locked.head != base:
                    return None
                if pull is not None:
                    mark_merged(conn, rid, pull, commit.id, commit.author, now)
                if staged_shards:
                    if session_id is None:
                        raise CatalogError("staged shards are copied from a session's rows")
                    copy_staged_shards(conn, rid, session_id, staged_shards, now)
                if pg:
                    self._publish_pg(conn, branch, base, commit, nodes, now, action, values)
                    crash_point("commit.in_tx")
                    return commit.id
                self._publish_sqlite(conn, branch, base, commit, nodes, now, action, values)
                done = commit.id
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
        conn: DriverTx,
        branch: str,
        base: str,
        commit: CommitRecord,
        nodes: Nodes,
        now: float,
        action: str,
        values: dict[str, Any],
    ) -> None:
        key, session_id = values["p_key"], values["p_session"]
        q = pub.pg_publish(bool(nodes), key is not None, session_id is not None)
        bound = pub.pg_values(
            self.repo_id,
            branch,
            base,
            commit,
            now,
            new_blobs=nodes,
            action=action,
            session_id=session_id,
            idempotency_key=key,
        )
        moved = conn.execute(q, bound).scalar_one()
        assert moved == 1, "the branch row is locked by this transaction"

    def _publish_sqlite(
        self,
        conn: DriverTx,
        branch: str,
        base: str,
        commit: CommitRecord,
        nodes: Nodes,
        now: float,
        action: str,
        values: dict[str, Any],
    ) -> None:
        rid = self.repo_id
        put_nodes(conn, rid, nodes, now)
        conn.execute(pub.INSERT_COMMIT, pub.commit_values(rid, commit, now))
        moved = conn.execute(
            pub.MOVE_BRANCH,
            {"p_repo": rid, "p_branch": branch, "p_base": base, "p_new": commit.id, "p_now": now},
        )
        assert moved.rowcount == 1, "the branch row is locked by this transaction"
        conn.execute(pub.INSERT_REFLOG, pub.reflog_values(rid, branch, action, base, commit, now))
        if values["p_key"] is not None:
            conn.execute(
                pub.INSERT_KEY,
                {
                    "repo_id": rid,
                    "branch": branch,
                    "key": values["p_key"],
                    "commit_id": commit.id,
                    "created_at": now,
                },
            )

    def _lock_required(self, conn: DriverTx, require: Sequence[str]) -> None:
        need = sorted(set(require))
        found = set(
            conn.execute(
                sa.select(commits.c.id)
                .where(commits.c.repo_id == self.repo_id, commits.c.id.in_(need))
                .with_for_update(read=True)
            ).scalars()
        )
        missing = [c for c in need if c not in found]
        if missing:
            raise NotFoundError(
                f"commit(s) {', '.join(missing)} no longer exist (expired meanwhile?)"
            )
