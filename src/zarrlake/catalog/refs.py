"""Refs: branches and tags, moved only by compare-and-swap, and the ref log."""

from __future__ import annotations

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.base import CatalogBase
from zarrlake.catalog.rows import CommitRow, RefLogRow, bound_head_query, commit_row
from zarrlake.catalog.schema import commits, reflog, refs
from zarrlake.errors import AlreadyExistsError, NotFoundError

__all__ = ["RefQueries"]


class RefQueries(CatalogBase):
    def get_ref(self, repo_id: int, name: str) -> tuple[str, str] | None:
        """(kind, commit id) of a ref, or ``None``."""
        with self.read() as conn:
            row = conn.execute(
                sa.select(refs.c.kind, refs.c.commit_id).where(
                    refs.c.repo_id == repo_id, refs.c.name == name
                )
            ).first()
        return None if row is None else (row.kind, row.commit_id)

    def branch_head(self, repo_id: int, branch: str) -> CommitRow | None:
        """The head commit of a branch, or ``None`` if there is no such branch (one query)."""
        with self.read() as conn:
            row = conn.execute(bound_head_query(), {"h_repo": repo_id, "h_branch": branch}).first()
        return None if row is None else commit_row(row)

    def list_refs(self, repo_id: int, kind: str) -> dict[str, str]:
        with self.read() as conn:
            return {
                r.name: r.commit_id
                for r in conn.execute(
                    sa.select(refs.c.name, refs.c.commit_id)
                    .where(refs.c.repo_id == repo_id, refs.c.kind == kind)
                    .order_by(refs.c.name)
                )
            }

    def create_ref(self, repo_id: int, name: str, kind: str, commit_id: str, author: str) -> None:
        with self.tx(write=True) as conn:
            # expire (which takes the fence exclusively) cannot delete the commit between the
            # check below and the insert
            dia.gc_fence(conn, repo_id, exclusive=False)
            existing = conn.execute(
                sa.select(refs.c.kind).where(refs.c.repo_id == repo_id, refs.c.name == name)
            ).scalar()
            if existing is not None:
                raise AlreadyExistsError(f"a {existing} named {name!r} already exists")
            if not conn.execute(
                sa.select(commits.c.id).where(
                    commits.c.repo_id == repo_id, commits.c.id == commit_id
                )
            ).first():
                raise NotFoundError(f"no commit {commit_id!r} in this repo")
            now = self.now(conn)
            conn.execute(
                sa.insert(refs).values(
                    repo_id=repo_id, name=name, kind=kind, commit_id=commit_id, updated_at=now
                )
            )
            self.log_ref(conn, repo_id, name, "create", None, commit_id, author, now, "")

    def delete_ref(self, repo_id: int, name: str, kind: str, author: str) -> str:
        with self.tx(write=True) as conn:
            old = conn.execute(
                sa.select(refs.c.commit_id).where(
                    refs.c.repo_id == repo_id, refs.c.name == name, refs.c.kind == kind
                )
            ).scalar()
            if old is None:
                raise NotFoundError(f"no {kind} named {name!r}")
            conn.execute(sa.delete(refs).where(refs.c.repo_id == repo_id, refs.c.name == name))
            self.log_ref(conn, repo_id, name, "delete", old, None, author, self.now(conn), "")
            return str(old)

    def move_branch(
        self,
        repo_id: int,
        name: str,
        expected: str,
        new: str,
        author: str,
        action: str,
        message: str = "",
    ) -> bool:
        """Compare-and-swap a branch (explicit resets); ``False`` if it was not at ``expected``."""
        with self.tx(write=True) as conn:
            dia.gc_fence(conn, repo_id, exclusive=False)  # see create_ref
            if not conn.execute(
                sa.select(commits.c.id).where(commits.c.repo_id == repo_id, commits.c.id == new)
            ).first():
                raise NotFoundError(f"no commit {new!r} in this repo")
            now = self.now(conn)
            if not self.cas(conn, repo_id, name, expected, new, now):
                return False
            self.log_ref(conn, repo_id, name, action, expected, new, author, now, message)
            return True

    def reflog(self, repo_id: int, name: str, limit: int | None = None) -> list[RefLogRow]:
        """Moves of a ref, newest first."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
        )
        if limit is not None:
            q = q.limit(limit)
        with self.read() as conn:
            return [
                RefLogRow(
                    r.name, r.action, r.old_commit, r.new_commit, r.author, float(r.at), r.message
                )
                for r in conn.execute(q)
            ]

    def reflog_position(self, repo_id: int, name: str, n: int) -> RefLogRow | None:
        """The ``n``-th newest ref log entry of a ref (0 is the latest move)."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
            .offset(n)
            .limit(1)
        )
        with self.read() as conn:
            r = conn.execute(q).first()
        if r is None:
            return None
        return RefLogRow(
            r.name, r.action, r.old_commit, r.new_commit, r.author, float(r.at), r.message
        )

    def ref_at(self, repo_id: int, name: str, at: float) -> str | None:
        """The commit a ref pointed to at time ``at`` (from the ref log).

        Times are shown to users rounded to the microsecond (datetime's resolution), and the
        catalog's float timestamps are that precise at best: compare with a microsecond of
        slack, so that a time copied from the log or the ref log selects that very entry.
        """
        at += 1e-6
        with self.read() as conn:
            row = conn.execute(
                sa.select(reflog.c.new_commit)
                .where(reflog.c.repo_id == repo_id, reflog.c.name == name, reflog.c.at <= at)
                .order_by(reflog.c.id.desc())
                .limit(1)
            ).first()
        return None if row is None else row.new_commit

    # -- the commit transaction ---------------------------------------------------------------
