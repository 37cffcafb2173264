"""Refs: branches and tags, moved only by compare-and-swap, and the ref log."""

from __future__ import annotations

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.rows import commit_record, prepared_head
from zarrlake.catalog.schema import commits, reflog, refs
from zarrlake.errors import AlreadyExistsError, NotFoundError
from zarrlake.model.records import CommitRecord
from zarrlake.types import RefLogEntry, from_epoch

__all__ = ["RefQueries", "log_ref", "move_ref"]


def move_ref(conn: DriverTx, repo_id: int, name: str, old: str, new: str, now: float) -> bool:
    """Compare-and-swap a branch from ``old`` to ``new``: whether it moved."""
    res = conn.execute(
        sa.update(refs)
        .where(
            refs.c.repo_id == repo_id,
            refs.c.name == name,
            refs.c.kind == "branch",
            refs.c.commit_id == old,
        )
        .values(commit_id=new, updated_at=now)
    )
    return res.rowcount == 1


def log_ref(
    conn: DriverTx,
    repo_id: int,
    name: str,
    action: str,
    old: str | None,
    new: str | None,
    author: str,
    now: float,
    message: str,
) -> None:
    conn.execute(
        sa.insert(reflog).values(
            repo_id=repo_id,
            name=name,
            action=action,
            old_commit=old,
            new_commit=new,
            author=author,
            at=now,
            message=message,
        )
    )


def _entry(r: sa.Row[tuple[object, ...]]) -> RefLogEntry:
    return RefLogEntry(
        r.name, r.action, r.old_commit, r.new_commit, r.author, from_epoch(float(r.at)), r.message
    )


class RefQueries(Scoped):
    """A repo's branches and tags."""

    def get(self, name: str) -> tuple[str, str] | None:
        """(kind, commit id) of a ref, or ``None``."""
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(refs.c.kind, refs.c.commit_id).where(
                    refs.c.repo_id == self.repo_id, refs.c.name == name
                )
            ).first()
        return None if row is None else (row.kind, row.commit_id)

    def head(self, branch: str) -> CommitRecord | None:
        """The head commit of a branch, or ``None`` if there is no such branch (one query)."""
        with self.db.read() as conn:
            row = conn.execute(
                prepared_head(), {"h_repo": self.repo_id, "h_branch": branch}
            ).first()
        return None if row is None else commit_record(row)

    def all(self, kind: str) -> dict[str, str]:
        """Ref name -> commit id, for branches or tags."""
        with self.db.read() as conn:
            return {
                r.name: r.commit_id
                for r in conn.execute(
                    sa.select(refs.c.name, refs.c.commit_id)
                    .where(refs.c.repo_id == self.repo_id, refs.c.kind == kind)
                    .order_by(refs.c.name)
                )
            }

    def create(self, name: str, kind: str, commit_id: str, author: str) -> None:
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            # expire (which takes the fence exclusively) cannot delete the commit between the
            # check below and the insert
            dia.gc_fence(conn, rid, exclusive=False)
            existing = conn.execute(
                sa.select(refs.c.kind).where(refs.c.repo_id == rid, refs.c.name == name)
            ).scalar()
            if existing is not None:
                raise AlreadyExistsError(f"a {existing} named {name!r} already exists")
            if not conn.execute(
                sa.select(commits.c.id).where(commits.c.repo_id == rid, commits.c.id == commit_id)
            ).first():
                raise NotFoundError(f"no commit {commit_id!r} in this repo")
            now = self.db.now(conn)
            conn.execute(
                sa.insert(refs).values(
                    repo_id=rid, name=name, kind=kind, commit_id=commit_id, updated_at=now
                )
            )
            log_ref(conn, rid, name, "create", None, commit_id, author, now, "")

    def delete(self, name: str, kind: str, author: str) -> str:
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            old = conn.execute(
                sa.select(refs.c.commit_id).where(
                    refs.c.repo_id == rid, refs.c.name == name, refs.c.kind == kind
                )
            ).scalar()
            if old is None:
                raise NotFoundError(f"no {kind} named {name!r}")
            conn.execute(sa.delete(refs).where(refs.c.repo_id == rid, refs.c.name == name))
            log_ref(conn, rid, name, "delete", old, None, author, self.db.now(conn), "")
            return str(old)

    def move(
        self, name: str, expected: str, new: str, author: str, action: str, message: str = ""
    ) -> bool:
        """Compare-and-swap a branch (resets, fast-forwards); ``False`` if it was not at
        ``expected``."""
        rid = self.repo_id
        with self.db.tx(write=True) as conn:
            dia.gc_fence(conn, rid, exclusive=False)  # see create
            if not conn.execute(
                sa.select(commits.c.id).where(commits.c.repo_id == rid, commits.c.id == new)
            ).first():
                raise NotFoundError(f"no commit {new!r} in this repo")
            now = self.db.now(conn)
            if not move_ref(conn, rid, name, expected, new, now):
                return False
            log_ref(conn, rid, name, action, expected, new, author, now, message)
            return True

    def log(self, name: str, limit: int | None = None) -> list[RefLogEntry]:
        """Moves of a ref, newest first."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == self.repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
        )
        if limit is not None:
            q = q.limit(limit)
        with self.db.read() as conn:
            return [_entry(r) for r in conn.execute(q)]

    def log_position(self, name: str, n: int) -> RefLogEntry | None:
        """The ``n``-th newest ref log entry of a ref (0 is the latest move)."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == self.repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
            .offset(n)
            .limit(1)
        )
        with self.db.read() as conn:
            r = conn.execute(q).first()
        return None if r is None else _entry(r)

    def at(self, name: str, at: float) -> str | None:
        """The commit a ref pointed to at time ``at`` (from the ref log).

        Times are shown to users rounded to the microsecond (datetime's resolution), and the
        catalog's float timestamps are that precise at best: compare with a microsecond of
        slack, so that a time copied from the log or the ref log selects that very entry.
        """
        at += 1e-6
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(reflog.c.new_commit)
                .where(reflog.c.repo_id == self.repo_id, reflog.c.name == name, reflog.c.at <= at)
                .order_by(reflog.c.id.desc())
                .limit(1)
            ).first()
        return None if row is None else row.new_commit
