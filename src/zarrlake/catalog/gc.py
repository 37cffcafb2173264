"""Garbage collection's and expiry's queries. The safety argument is in docs/history.md
("Garbage collection"); its commit-side half is the fence and claim check of every session
commit (:mod:`zarrlake.catalog.publish`) and :meth:`GcQueries.refuse_swept_hits`."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.rows import batches
from zarrlake.catalog.schema import blobs, commits, gc_marks, moved, refs, sessions, staged
from zarrlake.errors import ObjectMissingError

__all__ = ["GcQueries", "refuse_swept_hits"]


class GcQueries(Scoped):
    """Garbage collection's and expiry's bookkeeping of a repo."""

    def delete_commits(self, ids: Sequence[str]) -> list[str]:
        """Delete commits (``expire``), except any that a ref or an open session's base points
        to at the moment of deletion. Returns the ids deleted."""
        protected_refs = sa.select(refs.c.commit_id).where(refs.c.repo_id == self.repo_id)
        protected_bases = sa.select(sessions.c.base_commit).where(
            sessions.c.repo_id == self.repo_id, sessions.c.status == "open"
        )
        deleted: list[str] = []
        for batch in batches(sorted(ids)):
            with self.db.tx(write=True) as conn:
                # refs created or moved meanwhile are seen by the protection below
                dia.gc_fence(conn, self.repo_id, exclusive=True)
                deleted += conn.execute(
                    sa.delete(commits)
                    .where(
                        commits.c.repo_id == self.repo_id,
                        commits.c.id.in_(list(batch)),
                        commits.c.id.not_in(protected_refs),
                        commits.c.id.not_in(protected_bases),
                    )
                    .returning(commits.c.id)
                ).scalars()
        return deleted

    def live_staged(self) -> tuple[set[bytes], list[tuple[bytes, int, int, bytes]], set[bytes]]:
        """What open, unexpired sessions stage (gc roots): chunk objects, packed chunks as
        (pack, offset, length, hash), and metadata blobs."""
        with self.db.tx() as conn:
            now = self.db.now(conn)
            rows = conn.execute(
                sa.select(
                    staged.c.kind,
                    staged.c.hash,
                    staged.c.length,
                    staged.c.pack,
                    staged.c.pack_offset,
                    staged.c.inline.is_(None).label("obj"),
                )
                .select_from(staged.join(sessions, sessions.c.id == staged.c.session_id))
                .where(
                    sessions.c.repo_id == self.repo_id,
                    sessions.c.status == "open",
                    sessions.c.expires_at > now,
                    staged.c.hash.is_not(None),
                    staged.c.source.is_(None),  # a virtual chunk names no object
                )
            ).all()
        chunks = [r for r in rows if r.kind in ("chunk", "raw") and r.obj]
        objects = {bytes(r.hash) for r in chunks if r.pack is None}
        packed = [
            (bytes(r.pack), int(r.pack_offset), int(r.length), bytes(r.hash))
            for r in chunks
            if r.pack is not None
        ]
        metas = {bytes(r.hash) for r in rows if r.kind == "meta"}
        return objects, packed, metas

    def moves(self) -> dict[tuple[bytes, int], tuple[bytes, int]]:
        """Every packed chunk gc moved: (pack, offset) -> (new pack, new offset)."""
        with self.db.tx() as conn:
            rows = conn.execute(sa.select(moved).where(moved.c.repo_id == self.repo_id)).all()
        return {
            (bytes(r.pack), int(r.pack_offset)): (bytes(r.new_pack), int(r.new_offset))
            for r in rows
        }

    def moved_to(self, pack: bytes, offset: int) -> tuple[bytes, int] | None:
        """Where gc moved one packed chunk, if it did."""
        with self.db.tx() as conn:
            r = conn.execute(
                sa.select(moved.c.new_pack, moved.c.new_offset).where(
                    moved.c.repo_id == self.repo_id,
                    moved.c.pack == pack,
                    moved.c.pack_offset == offset,
                )
            ).first()
        return None if r is None else (bytes(r.new_pack), int(r.new_offset))

    def record_moves(self, rows: Sequence[tuple[bytes, int, bytes, int]]) -> None:
        """Record packed chunks moved to new packs (already durable), in one transaction."""
        ins = dia.insert_ignore(moved, self.db.dialect)
        values = [
            {"repo_id": self.repo_id, "pack": p, "pack_offset": o, "new_pack": q, "new_offset": n}
            for p, o, q, n in rows
        ]
        with self.db.tx(write=True) as conn:
            for batch in batches(values):
                conn.execute(ins, list(batch))

    def forget_moves(self, packs: Sequence[bytes]) -> None:
        """Drop the moves out of packs that no ref names any more."""
        for batch in batches(sorted(packs)):
            with self.db.tx(write=True) as conn:
                conn.execute(
                    sa.delete(moved).where(moved.c.repo_id == self.repo_id, moved.c.pack.in_(batch))
                )

    def blob_index(self) -> dict[bytes, tuple[str, int]]:
        """Every catalog node of a repo: hash -> (kind, size in bytes)."""
        with self.db.tx() as conn:
            return {
                bytes(r.hash): (r.kind, int(r.size))
                for r in conn.execute(
                    sa.select(
                        blobs.c.hash, blobs.c.kind, sa.func.length(blobs.c.data).label("size")
                    ).where(blobs.c.repo_id == self.repo_id)
                )
            }

    def mark(self, items: Sequence[tuple[str, bytes, int]]) -> None:
        """Record (kind, hash, size) as unreachable now, unless already marked."""
        ins = dia.insert_ignore(gc_marks, self.db.dialect)
        for batch in batches(list(items)):
            with self.db.tx(write=True) as conn:
                now = self.db.now(conn)
                conn.execute(
                    ins,
                    [
                        {
                            "repo_id": self.repo_id,
                            "kind": k,
                            "hash": h,
                            "state": "marked",
                            "size": n,
                            "marked_at": now,
                            "run_id": None,
                            "deleted_at": None,
                        }
                        for k, h, n in batch
                    ],
                )

    def marks(self, kind: str) -> list[tuple[bytes, str, int, float]]:
        """(hash, state, size, marked_at) of every mark of a kind."""
        with self.db.tx() as conn:
            return [
                (bytes(r.hash), r.state, int(r.size), float(r.marked_at))
                for r in conn.execute(
                    sa.select(
                        gc_marks.c.hash, gc_marks.c.state, gc_marks.c.size, gc_marks.c.marked_at
                    ).where(gc_marks.c.repo_id == self.repo_id, gc_marks.c.kind == kind)
                )
            ]

    def unmark(self, kind: str, hashes: Sequence[bytes]) -> None:
        """Forget marks (not claims nor tombstones) of things found in use again or gone."""
        for batch in batches(list(hashes)):
            with self.db.tx(write=True) as conn:
                conn.execute(
                    sa.delete(gc_marks).where(
                        gc_marks.c.repo_id == self.repo_id,
                        gc_marks.c.kind == kind,
                        gc_marks.c.state == "marked",
                        gc_marks.c.hash.in_(list(batch)),
                    )
                )

    def eligible(self, kind: str, grace: float) -> list[tuple[bytes, int]]:
        """(hash, size) of marks at least ``grace`` seconds old (by the catalog's clock)."""
        with self.db.tx() as conn:
            cutoff = self.db.now(conn) - grace
            return [
                (bytes(r.hash), int(r.size))
                for r in conn.execute(
                    sa.select(gc_marks.c.hash, gc_marks.c.size).where(
                        gc_marks.c.repo_id == self.repo_id,
                        gc_marks.c.kind == kind,
                        gc_marks.c.state == "marked",
                        gc_marks.c.marked_at <= cutoff,
                    )
                )
            ]

    def claim(
        self, run_id: str, hashes: Sequence[bytes], grace: float
    ) -> tuple[list[tuple[bytes, int]], list[tuple[bytes, int]]]:
        """Claim objects for deletion by gc run ``run_id``: (claimed, taken over).

        Claimed: marks of ``hashes`` still marked and at least ``grace`` seconds old. Taken
        over: claims of other runs (crashed or concurrent), whatever they were. Runs under
        the exclusive gc fence, so every session commit is wholly before it (and then visible
        to the liveness check that follows) or wholly after it (and then sees the claims).
        """
        m = gc_marks
        claimed: list[tuple[bytes, int]] = []
        with self.db.tx(write=True) as conn:
            dia.gc_fence(conn, self.repo_id, exclusive=True)
            cutoff = self.db.now(conn) - grace
            for batch in batches(list(hashes)):
                claimed += [
                    (bytes(r.hash), int(r.size))
                    for r in conn.execute(
                        sa.update(m)
                        .where(
                            m.c.repo_id == self.repo_id,
                            m.c.kind == "object",
                            m.c.state == "marked",
                            m.c.marked_at <= cutoff,
                            m.c.hash.in_(list(batch)),
                        )
                        .values(state="deleting", run_id=run_id)
                        .returning(m.c.hash, m.c.size)
                    )
                ]
            taken = [
                (bytes(r.hash), int(r.size))
                for r in conn.execute(
                    sa.update(m)
                    .where(
                        m.c.repo_id == self.repo_id,
                        m.c.kind == "object",
                        m.c.state == "deleting",
                        m.c.run_id != run_id,
                    )
                    .values(run_id=run_id)
                    .returning(m.c.hash, m.c.size)
                )
            ]
        return claimed, taken

    def release(self, run_id: str, hashes: Sequence[bytes]) -> list[bytes]:
        """Drop this run's claims on objects found in use; returns those still claimed by it
        (a claim another run took over is not this run's to release)."""
        released: list[bytes] = []
        m = gc_marks
        for batch in batches(list(hashes)):
            with self.db.tx(write=True) as conn:
                released += [
                    bytes(h)
                    for h in conn.execute(
                        sa.delete(m)
                        .where(
                            m.c.repo_id == self.repo_id,
                            m.c.kind == "object",
                            m.c.state == "deleting",
                            m.c.run_id == run_id,
                            m.c.hash.in_(list(batch)),
                        )
                        .returning(m.c.hash)
                    ).scalars()
                ]
        return released

    def tombstone(self, hashes: Sequence[bytes]) -> None:
        """Record claimed objects as deleted (now, by the catalog's clock)."""
        m = gc_marks
        for batch in batches(list(hashes)):
            with self.db.tx(write=True) as conn:
                conn.execute(
                    sa.update(m)
                    .where(
                        m.c.repo_id == self.repo_id,
                        m.c.kind == "object",
                        m.c.state == "deleting",
                        m.c.hash.in_(list(batch)),
                    )
                    .values(state="deleted", deleted_at=self.db.now(conn))
                )

    def delete_nodes(self, hashes: Sequence[bytes], grace: float) -> list[bytes]:
        """Delete catalog nodes whose mark is at least ``grace`` seconds old and that were not
        written again since they were marked; forget their marks. Returns the hashes deleted.

        The check and the delete are one statement, so a commit writing the same node is
        either before it (the node survives) or after it (the commit inserts it afresh).
        """
        m = gc_marks
        deleted: list[bytes] = []
        for batch in batches(list(hashes)):
            with self.db.tx(write=True) as conn:
                cutoff = self.db.now(conn) - grace
                unchanged = (
                    sa.select(m.c.hash)
                    .where(
                        m.c.repo_id == blobs.c.repo_id,
                        m.c.kind == "blob",
                        m.c.hash == blobs.c.hash,
                        m.c.state == "marked",
                        m.c.marked_at <= cutoff,
                        blobs.c.created_at < m.c.marked_at,
                    )
                    .exists()
                )
                deleted += [
                    bytes(h)
                    for h in conn.execute(
                        sa.delete(blobs)
                        .where(
                            blobs.c.repo_id == self.repo_id,
                            blobs.c.hash.in_(list(batch)),
                            unchanged,
                        )
                        .returning(blobs.c.hash)
                    ).scalars()
                ]
                conn.execute(
                    sa.delete(m).where(
                        m.c.repo_id == self.repo_id, m.c.kind == "blob", m.c.hash.in_(list(batch))
                    )
                )
        return deleted

    def purge_tombstones(self) -> int:
        """Forget deleted objects that no open session predates (none of those can be
        refused any more). Returns how many were forgotten."""
        m = gc_marks
        with self.db.tx(write=True) as conn:
            now = self.db.now(conn)
            oldest = conn.execute(
                sa.select(sa.func.min(sessions.c.created_at)).where(
                    sessions.c.repo_id == self.repo_id,
                    sessions.c.status == "open",
                    sessions.c.expires_at > now,
                )
            ).scalar()
            cond = [m.c.repo_id == self.repo_id, m.c.kind == "object", m.c.state == "deleted"]
            if oldest is not None:
                cond.append(m.c.deleted_at < float(oldest))
            return int(conn.execute(sa.delete(m).where(*cond)).rowcount)


def refuse_swept_hits(conn: DriverTx, repo_id: int, session_id: str) -> None:
    """Refuse a session commit that stages an object or pack gc is deleting, or deleted
    after the session began (the session may have deduplicated against it before it went,
    or written a pack that gc found unreferenced before the session staged it).

    The commit calls it when it found, after taking the shared gc fence, that gc claimed or
    deleted any object of the repo (``publish.preflight`` takes the fence, and
    ``publish.lock_head`` reads the claims with the branch row)."""
    m = gc_marks
    began = sa.select(sessions.c.created_at).where(sessions.c.id == session_id).scalar_subquery()
    hits = conn.execute(
        sa.select(m.c.hash)
        .select_from(
            m.join(
                staged,
                sa.or_(
                    sa.and_(staged.c.pack.is_(None), staged.c.hash == m.c.hash),
                    staged.c.pack == m.c.hash,
                ),
            )
        )
        .where(
            staged.c.session_id == session_id,
            staged.c.kind.in_(("chunk", "raw")),
            staged.c.inline.is_(None),
            m.c.repo_id == repo_id,
            m.c.kind == "object",
            ~sa.exists().where(  # a packed chunk gc moved elsewhere is still readable
                moved.c.repo_id == repo_id,
                moved.c.pack == staged.c.pack,
                moved.c.pack_offset == staged.c.pack_offset,
            ),
            sa.or_(
                m.c.state == "deleting",
                sa.and_(m.c.state == "deleted", m.c.deleted_at >= began),
            ),
        )
        .limit(5)
    ).scalars()
    found = [bytes(h).hex() for h in hits]
    if found:
        raise ObjectMissingError(
            f"session {session_id} stages chunk object(s) {', '.join(f[:12] for f in found)} "
            "that garbage collection is deleting or deleted while the session was open, so "
            "the commit was refused and nothing changed. Commit again once gc has finished; "
            "if it still fails, write those chunks in a new session"
        )
