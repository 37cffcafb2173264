"""The catalog: repos, commits, refs, sessions, staged changes and content-addressed nodes.

One code path for SQLite and PostgreSQL (quirks in :mod:`zarrlake.catalog.dialect`). Every
public method is one transaction. Branches move only by compare-and-swap::

    UPDATE zl_refs SET commit_id = :new WHERE repo_id = :r AND name = :b AND commit_id = :old
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from zarrlake.catalog import dialect as dia
from zarrlake.catalog.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    blobs,
    commit_keys,
    commits,
    gc_marks,
    info,
    metadata,
    reads,
    reflog,
    refs,
    repos,
    sessions,
    staged,
)
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    NotFoundError,
    ObjectMissingError,
    SchemaVersionError,
    SessionClosedError,
    SessionExpiredError,
)

__all__ = [
    "Catalog",
    "CommitRow",
    "RefLogRow",
    "SessionRow",
    "StagedRow",
    "catalog_for",
    "forget_catalog",
]


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


@dataclass(frozen=True, slots=True)
class StagedRow:
    path: str
    kind: str
    key: str
    hash: bytes | None
    length: int
    inline: bytes | None


@dataclass(frozen=True, slots=True)
class RefLogRow:
    name: str
    action: str
    old_commit: str | None
    new_commit: str | None
    author: str
    at: float
    message: str


_COMMIT_COLS = [
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


def _commit_row(r: Any) -> CommitRow:
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


def _session_row(r: Any) -> SessionRow:
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


class _CasLost(Exception):
    """Internal: the branch moved; roll the transaction back."""


_catalogs: dict[tuple[int, str], Catalog] = {}
_catalogs_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # Pooled connections belong to the parent; the child must open its own (SQLAlchemy's
    # documented recipe). Catalogs are keyed by pid, so the child builds new ones anyway.
    for cat in list(_catalogs.values()):
        cat.engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def catalog_for(url: str) -> Catalog:
    """The process-wide :class:`Catalog` for a URL (one engine per process and URL)."""
    key = (os.getpid(), url)
    with _catalogs_lock:
        cat = _catalogs.get(key)
        if cat is None:
            cat = _catalogs[key] = Catalog(url)
        return cat


def forget_catalog(url: str) -> None:
    """Close and drop this process's engine for ``url`` (its database is being replaced)."""
    with _catalogs_lock:
        cat = _catalogs.pop((os.getpid(), url), None)
    if cat is not None:
        cat.engine.dispose()


class Catalog:
    """A connection to one catalog database (which may hold many repos)."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self.engine = dia.make_engine(url)
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
            raise CatalogError(
                f"cannot use catalog URL {url!r}: {exc}. Use sqlite:///path/to/file.db or "
                "postgresql+psycopg://user@host/db (pip install 'zarrlake[postgres]')"
            ) from exc
        self.dialect = self.engine.dialect.name
        self._now = dia.now_sql(self.dialect)
        self._upsert_staged = dia.upsert(staged, self.dialect, ["hash", "length", "inline"])
        # Writing a blob that exists refreshes its created_at: garbage collection deletes a
        # blob only if it was not written again since it was marked (docs/history.md).
        self._insert_blob = dia.upsert(blobs, self.dialect, ["created_at"])
        self._insert_read = dia.insert_ignore(reads, self.dialect)
        self._ensure_schema()

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[sa.Connection]:
        """One transaction; translates driver errors to :class:`CatalogError` (cause kept).

        Lock waits are the database's job (SQLite's busy timeout, PostgreSQL's row locks).
        """
        try:
            with self.engine.connect() as conn:
                if write:
                    conn = conn.execution_options(zl_write=True)
                with conn.begin():
                    yield conn
        except sa.exc.DBAPIError as exc:
            raise CatalogError(f"catalog {self._safe_url()} failed: {exc.orig}") from exc

    def _safe_url(self) -> str:
        return sa.make_url(self.url).render_as_string(hide_password=True)

    def now(self, conn: sa.Connection) -> float:
        return float(conn.execute(self._now).scalar_one())

    def clock(self) -> float:
        """The catalog's current time (epoch seconds)."""
        with self._tx() as conn:
            return self.now(conn)

    def _ensure_schema(self) -> None:
        try:
            with self.engine.connect() as conn:
                has = sa.inspect(conn).has_table("zl_info")
            if has:
                self._check_version()
                return
            with self._tx(write=True) as conn:
                dia.schema_lock(conn)
                metadata.create_all(conn, checkfirst=True)
                conn.execute(
                    dia.insert_ignore(info, self.dialect),
                    {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                )
        except sa.exc.DBAPIError as exc:
            raise CatalogError(f"cannot open catalog {self._safe_url()}: {exc.orig}") from exc
        self._check_version()

    def _check_version(self) -> None:
        with self._tx() as conn:
            v = conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).scalar()
        version = int(v or 0)
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"catalog schema version {version} is newer than this zarrlake supports "
                f"({SCHEMA_VERSION}); upgrade zarrlake"
            )
        if version < SCHEMA_VERSION:
            self.migrate()

    def migrate(self) -> int:
        """Upgrade the catalog schema to this release's version; returns the version."""
        with self._tx(write=True) as conn:
            dia.schema_lock(conn)
            v = int(
                conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).scalar()
                or 0
            )
            while v < SCHEMA_VERSION:
                MIGRATIONS[v + 1](conn)
                v += 1
            conn.execute(sa.update(info).where(info.c.key == "schema_version").values(value=str(v)))
        return v

    # -- repos ---------------------------------------------------------------------------------

    def create_repo(
        self,
        name: str,
        storage: str,
        root_hash: bytes,
        root_data: bytes,
        commit_id: str,
        author: str,
    ) -> int:
        """Create a repo with its initial (empty) commit and its ``main`` branch."""
        with self._tx(write=True) as conn:
            if conn.execute(sa.select(repos.c.id).where(repos.c.name == name)).first():
                raise AlreadyExistsError(
                    f"repo {name!r} already exists in this catalog; use Repo.open"
                )
            now = self.now(conn)
            repo_id = int(
                conn.execute(
                    sa.insert(repos)
                    .values(name=name, storage=storage, created_at=now)
                    .returning(repos.c.id)
                ).scalar_one()
            )
            self._put_blobs(conn, repo_id, {root_hash: ("root", root_data)}, now)
            conn.execute(
                sa.insert(commits).values(
                    repo_id=repo_id,
                    id=commit_id,
                    parent_id=None,
                    root_hash=root_hash,
                    changes_hash=None,
                    author=author,
                    message="Repository initialized",
                    meta="{}",
                    created_at=now,
                    generation=0,
                )
            )
            conn.execute(
                sa.insert(refs).values(
                    repo_id=repo_id, name="main", kind="branch", commit_id=commit_id, updated_at=now
                )
            )
            self._log_ref(conn, repo_id, "main", "create", None, commit_id, author, now, "")
            return repo_id

    def get_repo(self, name: str) -> tuple[int, str]:
        with self._tx() as conn:
            row = conn.execute(
                sa.select(repos.c.id, repos.c.storage).where(repos.c.name == name)
            ).first()
        if row is None:
            raise NotFoundError(
                f"no repo {name!r} in catalog {self._safe_url()}; "
                f"existing: {self.list_repos() or 'none'} (create one with Repo.create)"
            )
        return int(row.id), str(row.storage)

    def list_repos(self) -> list[str]:
        with self._tx() as conn:
            return [r[0] for r in conn.execute(sa.select(repos.c.name).order_by(repos.c.name))]

    # -- content-addressed nodes ---------------------------------------------------------------

    def _put_blobs(
        self, conn: sa.Connection, repo_id: int, items: dict[bytes, tuple[str, bytes]], now: float
    ) -> None:
        if items:
            conn.execute(
                self._insert_blob,
                [
                    {"repo_id": repo_id, "hash": h, "kind": k, "data": d, "created_at": now}
                    for h, (k, d) in items.items()
                ],
            )

    def put_blobs(self, repo_id: int, items: dict[bytes, tuple[str, bytes]]) -> None:
        with self._tx(write=True) as conn:
            self._put_blobs(conn, repo_id, items, self.now(conn))

    def get_blob(self, repo_id: int, h: bytes) -> bytes:
        with self._tx() as conn:
            data = conn.execute(
                sa.select(blobs.c.data).where(blobs.c.repo_id == repo_id, blobs.c.hash == h)
            ).scalar()
        if data is None:
            raise CatalogError(f"catalog node {h.hex()} is missing; run repo.fsck()")
        return bytes(data)

    # -- commits -------------------------------------------------------------------------------

    def get_commit(self, repo_id: int, commit_id: str) -> CommitRow:
        with self._tx() as conn:
            row = conn.execute(
                sa.select(*_COMMIT_COLS).where(
                    commits.c.repo_id == repo_id, commits.c.id == commit_id
                )
            ).first()
        if row is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return _commit_row(row)

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
        with self._tx() as conn:
            return [(str(r.what), str(r.id)) for r in conn.execute(q)]

    def get_commit_and_blob(self, repo_id: int, commit_id: str) -> tuple[CommitRow, bytes | None]:
        """A commit and its snapshot root's bytes, in one round trip."""
        q = (
            sa.select(*_COMMIT_COLS, blobs.c.data.label("root_data"))
            .select_from(commits)
            .outerjoin(
                blobs, sa.and_(blobs.c.repo_id == repo_id, blobs.c.hash == commits.c.root_hash)
            )
            .where(commits.c.repo_id == repo_id, commits.c.id == commit_id)
        )
        with self._tx() as conn:
            row = conn.execute(q).first()
        if row is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return _commit_row(row), None if row.root_data is None else bytes(row.root_data)

    def commits_with_prefix(self, repo_id: int, prefix: str, limit: int = 2) -> list[str]:
        with self._tx() as conn:
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
        base = sa.select(*_COMMIT_COLS).where(commits.c.repo_id == repo_id, commits.c.id == head)
        chain = base.cte("chain", recursive=True)
        step = sa.select(*_COMMIT_COLS).join(
            chain, sa.and_(commits.c.repo_id == repo_id, commits.c.id == chain.c.parent_id)
        )
        chain = chain.union_all(step)
        q = sa.select(chain).order_by(chain.c.generation.desc())
        if limit is not None:
            q = q.limit(limit)
        with self._tx() as conn:
            return [_commit_row(r) for r in conn.execute(q)]

    def commits_between(self, repo_id: int, base: str, head: str) -> list[CommitRow] | None:
        """First-parent commits after ``base`` up to ``head`` (oldest first).

        ``None`` if ``base`` is not a first-parent ancestor of ``head`` (the branch was reset).
        """
        if base == head:
            return []
        with self._tx() as conn:
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

    def get_ref(self, repo_id: int, name: str) -> tuple[str, str] | None:
        """(kind, commit id) of a ref, or ``None``."""
        with self._tx() as conn:
            row = conn.execute(
                sa.select(refs.c.kind, refs.c.commit_id).where(
                    refs.c.repo_id == repo_id, refs.c.name == name
                )
            ).first()
        return None if row is None else (row.kind, row.commit_id)

    @staticmethod
    def _head_query(repo_id: int, branch: str) -> sa.Select[Any]:
        return (
            sa.select(*_COMMIT_COLS)
            .select_from(refs)
            .join(
                commits,
                sa.and_(commits.c.repo_id == refs.c.repo_id, commits.c.id == refs.c.commit_id),
            )
            .where(refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch")
        )

    def branch_head(self, repo_id: int, branch: str) -> CommitRow | None:
        """The head commit of a branch, or ``None`` if there is no such branch (one query)."""
        with self._tx() as conn:
            row = conn.execute(self._head_query(repo_id, branch)).first()
        return None if row is None else _commit_row(row)

    def list_refs(self, repo_id: int, kind: str) -> dict[str, str]:
        with self._tx() as conn:
            return {
                r.name: r.commit_id
                for r in conn.execute(
                    sa.select(refs.c.name, refs.c.commit_id)
                    .where(refs.c.repo_id == repo_id, refs.c.kind == kind)
                    .order_by(refs.c.name)
                )
            }

    def create_ref(self, repo_id: int, name: str, kind: str, commit_id: str, author: str) -> None:
        with self._tx(write=True) as conn:
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
            self._log_ref(conn, repo_id, name, "create", None, commit_id, author, now, "")

    def delete_ref(self, repo_id: int, name: str, kind: str, author: str) -> str:
        with self._tx(write=True) as conn:
            old = conn.execute(
                sa.select(refs.c.commit_id).where(
                    refs.c.repo_id == repo_id, refs.c.name == name, refs.c.kind == kind
                )
            ).scalar()
            if old is None:
                raise NotFoundError(f"no {kind} named {name!r}")
            conn.execute(sa.delete(refs).where(refs.c.repo_id == repo_id, refs.c.name == name))
            self._log_ref(conn, repo_id, name, "delete", old, None, author, self.now(conn), "")
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
        with self._tx(write=True) as conn:
            dia.gc_fence(conn, repo_id, exclusive=False)  # see create_ref
            if not conn.execute(
                sa.select(commits.c.id).where(commits.c.repo_id == repo_id, commits.c.id == new)
            ).first():
                raise NotFoundError(f"no commit {new!r} in this repo")
            now = self.now(conn)
            if not self._cas(conn, repo_id, name, expected, new, now):
                return False
            self._log_ref(conn, repo_id, name, action, expected, new, author, now, message)
            return True

    def _cas(
        self, conn: sa.Connection, repo_id: int, name: str, old: str, new: str, now: float
    ) -> bool:
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

    def _log_ref(
        self,
        conn: sa.Connection,
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

    def reflog(self, repo_id: int, name: str, limit: int | None = None) -> list[RefLogRow]:
        """Moves of a ref, newest first."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
        )
        if limit is not None:
            q = q.limit(limit)
        with self._tx() as conn:
            return [
                RefLogRow(
                    r.name, r.action, r.old_commit, r.new_commit, r.author, float(r.at), r.message
                )
                for r in conn.execute(q)
            ]

    def ref_at(self, repo_id: int, name: str, at: float) -> str | None:
        """The commit a ref pointed to at time ``at`` (from the ref log).

        Times are shown to users rounded to the microsecond (datetime's resolution), and the
        catalog's float timestamps are that precise at best: compare with a microsecond of
        slack, so that a time copied from the log or the ref log selects that very entry.
        """
        at += 1e-6
        with self._tx() as conn:
            row = conn.execute(
                sa.select(reflog.c.new_commit)
                .where(reflog.c.repo_id == repo_id, reflog.c.name == name, reflog.c.at <= at)
                .order_by(reflog.c.id.desc())
                .limit(1)
            ).first()
        return None if row is None else row.new_commit

    # -- the commit transaction ---------------------------------------------------------------

    def commit(
        self,
        repo_id: int,
        session_id: str,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        *,
        idempotency_key: str | None = None,
    ) -> str | None:
        """Insert a commit and move ``branch`` from ``base`` to it, atomically.

        Returns the id of the commit now on the branch for this session: ``row.id``, or, when
        ``idempotency_key`` was already recorded on the branch, the commit recorded with it
        (nothing is committed again). ``None`` when the branch is no longer at ``base``. The
        session must still be open and unexpired; it is closed in the same transaction.
        """
        try:
            return self._commit(repo_id, session_id, branch, base, row, new_blobs, idempotency_key)
        except _CasLost:
            return None

    def _commit(
        self,
        repo_id: int,
        session_id: str,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        idempotency_key: str | None,
    ) -> str | None:
        with self._tx(write=True) as conn:
            now = self.now(conn)
            self._check_session(conn, session_id, now)
            self._refuse_swept_objects(conn, repo_id, session_id)  # takes the gc fence first
            # The branch row is locked before the key is looked up, so two commits with one
            # key are serialized and the second sees the key the first recorded.
            head = conn.execute(
                sa.select(refs.c.commit_id)
                .where(refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch")
                .with_for_update()
            ).scalar()
            if head is None:
                raise NotFoundError(f"branch {branch!r} no longer exists")
            done = self._recorded_key(conn, repo_id, branch, idempotency_key)
            if done is None:
                if head != base:
                    return None
                self._insert_commit(conn, repo_id, branch, base, row, new_blobs)
                if idempotency_key is not None:
                    conn.execute(
                        sa.insert(commit_keys).values(
                            repo_id=repo_id,
                            branch=branch,
                            key=idempotency_key,
                            commit_id=row.id,
                            created_at=now,
                        )
                    )
                done = row.id
            conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id)
                .values(status="committed", commit_id=done)
            )
            conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
            conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            return done

    @staticmethod
    def _recorded_key(
        conn: sa.Connection, repo_id: int, branch: str, key: str | None
    ) -> str | None:
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

    def recorded_key(self, repo_id: int, branch: str, key: str) -> str | None:
        """The commit recorded on ``branch`` with idempotency ``key``, if any."""
        with self._tx() as conn:
            return self._recorded_key(conn, repo_id, branch, key)

    def insert_commit(
        self,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
    ) -> float | None:
        """Like :meth:`commit` without a session (merges, reverts); CAS on ``branch``."""
        try:
            with self._tx(write=True) as conn:
                return self._insert_commit(conn, repo_id, branch, base, row, new_blobs)
        except _CasLost:
            return None

    def _insert_commit(
        self,
        conn: sa.Connection,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        action: str = "commit",
    ) -> float:
        now = self.now(conn)
        self._put_blobs(conn, repo_id, new_blobs, now)
        conn.execute(
            sa.insert(commits).values(
                repo_id=repo_id,
                id=row.id,
                parent_id=row.parent_id,
                merge_parent_id=row.merge_parent_id,
                root_hash=row.root_hash,
                changes_hash=row.changes_hash,
                author=row.author,
                message=row.message,
                meta=json.dumps(row.meta),
                created_at=now,
                generation=row.generation,
            )
        )
        if not self._cas(conn, repo_id, branch, base, row.id, now):
            raise _CasLost
        self._log_ref(conn, repo_id, branch, action, base, row.id, row.author, now, row.message)
        return now

    # -- sessions ------------------------------------------------------------------------------

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
        with self._tx(write=True) as conn:
            base = conn.execute(self._head_query(repo_id, branch)).first()
            if base is None:
                raise NotFoundError(f"no branch {branch!r}; create it with repo.create_branch()")
            head = base.id
            now = self.now(conn)
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
            return SessionRow(**values), _commit_row(base)

    def get_session(self, session_id: str) -> SessionRow:
        with self._tx() as conn:
            row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}")
        return _session_row(row)

    def list_sessions(self, repo_id: int, include_closed: bool = False) -> list[SessionRow]:
        q = sa.select(sessions).where(sessions.c.repo_id == repo_id)
        if not include_closed:
            q = q.where(sessions.c.status == "open")
        with self._tx() as conn:
            return [_session_row(r) for r in conn.execute(q.order_by(sessions.c.created_at))]

    def _check_session(self, conn: sa.Connection, session_id: str, now: float) -> SessionRow:
        row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}")
        s = _session_row(row)
        if s.status != "open":
            raise SessionClosedError(
                f"session {session_id} is {s.status}; open a new session with repo.writable_session()"
            )
        if now >= s.expires_at:
            raise SessionExpiredError(
                f"session {session_id} expired {now - s.expires_at:.1f} s ago; its writes cannot be "
                "committed. Open a new session (and extend long ones with session.extend())"
            )
        return s

    def update_session(self, session_id: str, **values: Any) -> SessionRow:
        """Change an open session (expiry, base commit, status) after checking it is usable."""
        extend_by = values.pop("extend_by", None)
        max_life = values.pop("max_life", None)
        with self._tx(write=True) as conn:
            now = self.now(conn)
            s = self._check_session(conn, session_id, now)
            if extend_by is not None:
                new_exp = now + extend_by
                if max_life is not None and new_exp - s.created_at > max_life:
                    new_exp = s.created_at + max_life
                values["expires_at"] = max(new_exp, s.expires_at)
            conn.execute(sa.update(sessions).where(sessions.c.id == session_id).values(**values))
            if values.get("status") == "abandoned":
                conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
                conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
            return _session_row(row)

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
        with self._tx(write=True) as conn:
            now = self.now(conn)
            s = self._check_session(conn, session_id, now)
            if blobs:
                self._put_blobs(conn, s.repo_id, blobs, now)
            if reads:
                conn.execute(
                    self._insert_read,
                    [{"session_id": session_id, "path": p, "key": k} for p, k in reads],
                )
            for path in drops:
                # A dropped node loses everything staged for it before the drop.
                conn.execute(
                    sa.delete(staged).where(
                        staged.c.session_id == session_id,
                        staged.c.path == path,
                        staged.c.kind.in_(("meta", "chunk")),
                    )
                )
            if drops:
                conn.execute(
                    self._upsert_staged,
                    [
                        {
                            "session_id": session_id,
                            "path": p,
                            "kind": "drop",
                            "key": "",
                            "hash": None,
                            "length": 0,
                            "inline": None,
                        }
                        for p in drops
                    ],
                )
            if rows:
                conn.execute(
                    self._upsert_staged,
                    [
                        {
                            "session_id": session_id,
                            "path": r.path,
                            "kind": r.kind,
                            "key": r.key,
                            "hash": r.hash,
                            "length": r.length,
                            "inline": r.inline,
                        }
                        for r in rows
                    ],
                )

    def replace_staged(self, session_id: str, rows: Sequence[StagedRow], base: str) -> None:
        """Replace all staged rows of a session and move its base (after a rebase)."""
        with self._tx(write=True) as conn:
            self._check_session(conn, session_id, self.now(conn))
            conn.execute(sa.delete(staged).where(staged.c.session_id == session_id))
            conn.execute(sa.delete(reads).where(reads.c.session_id == session_id))
            if rows:
                conn.execute(
                    self._upsert_staged,
                    [
                        {
                            "session_id": session_id,
                            "path": r.path,
                            "kind": r.kind,
                            "key": r.key,
                            "hash": r.hash,
                            "length": r.length,
                            "inline": r.inline,
                        }
                        for r in rows
                    ],
                )
            conn.execute(
                sa.update(sessions).where(sessions.c.id == session_id).values(base_commit=base)
            )

    def load_staged(self, session_id: str, kinds: Sequence[str] | None = None) -> list[StagedRow]:
        q = sa.select(staged).where(staged.c.session_id == session_id)
        if kinds is not None:
            q = q.where(staged.c.kind.in_(kinds))
        with self._tx() as conn:
            return [
                StagedRow(
                    r.path,
                    r.kind,
                    r.key,
                    None if r.hash is None else bytes(r.hash),
                    int(r.length),
                    None if r.inline is None else bytes(r.inline),
                )
                for r in conn.execute(q)
            ]

    def get_staged(
        self, session_id: str, path: str, kinds: Sequence[str], key: str
    ) -> dict[str, StagedRow]:
        """The staged rows of one key (and the node's drop marker), by kind."""
        with self._tx() as conn:
            rows = conn.execute(
                sa.select(staged).where(
                    staged.c.session_id == session_id,
                    staged.c.path == path,
                    sa.or_(
                        sa.and_(staged.c.kind.in_(kinds), staged.c.key == key),
                        staged.c.kind == "drop",
                    ),
                )
            ).all()
        return {
            r.kind: StagedRow(
                r.path,
                r.kind,
                r.key,
                None if r.hash is None else bytes(r.hash),
                int(r.length),
                None if r.inline is None else bytes(r.inline),
            )
            for r in rows
        }

    def record_reads(self, session_id: str, items: Iterable[tuple[str, str]]) -> None:
        values = [{"session_id": session_id, "path": p, "key": k} for p, k in items]
        if not values:
            return
        with self._tx(write=True) as conn:
            conn.execute(self._insert_read, values)

    def load_reads(self, session_id: str) -> list[tuple[str, str]]:
        with self._tx() as conn:
            return [
                (r.path, r.key)
                for r in conn.execute(
                    sa.select(reads.c.path, reads.c.key).where(reads.c.session_id == session_id)
                )
            ]

    # == history and maintenance ==================================================================
    # Queries of zarrlake.history (ref expressions, merges, reverts) and zarrlake.maintenance
    # (gc, expire, fsck). Garbage collection's safety argument is in docs/history.md; its
    # commit-side half is _refuse_swept_objects, called by every session commit.

    _BATCH = 500  # hashes or ids per IN (...) list

    @classmethod
    def _batches(cls, items: Sequence[Any]) -> Iterator[Sequence[Any]]:
        for i in range(0, len(items), cls._BATCH):
            yield items[i : i + cls._BATCH]

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
        with self._tx() as conn:
            return conn.execute(sa.select(chain.c.id).where(chain.c.depth == n)).scalar()

    def reflog_position(self, repo_id: int, name: str, n: int) -> RefLogRow | None:
        """The ``n``-th newest ref log entry of a ref (0 is the latest move)."""
        q = (
            sa.select(reflog)
            .where(reflog.c.repo_id == repo_id, reflog.c.name == name)
            .order_by(reflog.c.id.desc())
            .offset(n)
            .limit(1)
        )
        with self._tx() as conn:
            r = conn.execute(q).first()
        if r is None:
            return None
        return RefLogRow(
            r.name, r.action, r.old_commit, r.new_commit, r.author, float(r.at), r.message
        )

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
        with self._tx() as conn:
            return {
                r.id: (r.parent_id, r.merge_parent_id, int(r.generation))
                for r in conn.execute(sa.select(graph))
            }

    def insert_commit_checked(
        self,
        repo_id: int,
        branch: str,
        base: str,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        *,
        require: Iterable[str],
        action: str,
    ) -> float | None:
        """A session-less commit (merge, revert) built from the snapshots of ``require``.

        Those commits must still exist (``expire`` may have dropped one meanwhile; their rows
        are share-locked so it cannot until this commits). CAS on ``branch`` from ``base``:
        ``None`` if the branch moved. The ref log records ``action``.
        """
        need = sorted(set(require))
        try:
            with self._tx(write=True) as conn:
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
                return self._insert_commit(conn, repo_id, branch, base, row, new_blobs, action)
        except _CasLost:
            return None

    def all_commits(self, repo_id: int) -> list[CommitRow]:
        """Every commit of a repo (for gc, expire and fsck)."""
        with self._tx() as conn:
            return [
                _commit_row(r)
                for r in conn.execute(sa.select(*_COMMIT_COLS).where(commits.c.repo_id == repo_id))
            ]

    def delete_commits(self, repo_id: int, ids: Sequence[str]) -> list[str]:
        """Delete commits (``expire``), except any that a ref or an open session's base points
        to at the moment of deletion. Returns the ids deleted."""
        protected_refs = sa.select(refs.c.commit_id).where(refs.c.repo_id == repo_id)
        protected_bases = sa.select(sessions.c.base_commit).where(
            sessions.c.repo_id == repo_id, sessions.c.status == "open"
        )
        deleted: list[str] = []
        for batch in self._batches(sorted(ids)):
            with self._tx(write=True) as conn:
                # refs created or moved meanwhile are seen by the protection below
                dia.gc_fence(conn, repo_id, exclusive=True)
                deleted += conn.execute(
                    sa.delete(commits)
                    .where(
                        commits.c.repo_id == repo_id,
                        commits.c.id.in_(list(batch)),
                        commits.c.id.not_in(protected_refs),
                        commits.c.id.not_in(protected_bases),
                    )
                    .returning(commits.c.id)
                ).scalars()
        return deleted

    def live_staged(self, repo_id: int) -> tuple[set[bytes], set[bytes]]:
        """(object hashes, blob hashes) staged by open, unexpired sessions: gc roots."""
        with self._tx() as conn:
            now = self.now(conn)
            rows = conn.execute(
                sa.select(staged.c.kind, staged.c.hash, staged.c.inline.is_(None).label("obj"))
                .select_from(staged.join(sessions, sessions.c.id == staged.c.session_id))
                .where(
                    sessions.c.repo_id == repo_id,
                    sessions.c.status == "open",
                    sessions.c.expires_at > now,
                    staged.c.hash.is_not(None),
                )
            ).all()
        objects = {bytes(r.hash) for r in rows if r.kind in ("chunk", "raw") and r.obj}
        metas = {bytes(r.hash) for r in rows if r.kind == "meta"}
        return objects, metas

    def get_blobs(self, repo_id: int, hashes: Sequence[bytes]) -> dict[bytes, tuple[str, bytes]]:
        """Several catalog nodes at once: hash -> (kind, bytes); missing ones are left out."""
        out: dict[bytes, tuple[str, bytes]] = {}
        for batch in self._batches(list(hashes)):
            with self._tx() as conn:
                for r in conn.execute(
                    sa.select(blobs.c.hash, blobs.c.kind, blobs.c.data).where(
                        blobs.c.repo_id == repo_id, blobs.c.hash.in_(list(batch))
                    )
                ):
                    out[bytes(r.hash)] = (r.kind, bytes(r.data))
        return out

    def blob_index(self, repo_id: int) -> dict[bytes, tuple[str, int]]:
        """Every catalog node of a repo: hash -> (kind, size in bytes)."""
        with self._tx() as conn:
            return {
                bytes(r.hash): (r.kind, int(r.size))
                for r in conn.execute(
                    sa.select(
                        blobs.c.hash, blobs.c.kind, sa.func.length(blobs.c.data).label("size")
                    ).where(blobs.c.repo_id == repo_id)
                )
            }

    def gc_mark(self, repo_id: int, items: Sequence[tuple[str, bytes, int]]) -> None:
        """Record (kind, hash, size) as unreachable now, unless already marked."""
        ins = dia.insert_ignore(gc_marks, self.dialect)
        for batch in self._batches(list(items)):
            with self._tx(write=True) as conn:
                now = self.now(conn)
                conn.execute(
                    ins,
                    [
                        {
                            "repo_id": repo_id,
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

    def gc_marks(self, repo_id: int, kind: str) -> list[tuple[bytes, str, int, float]]:
        """(hash, state, size, marked_at) of every mark of a kind."""
        with self._tx() as conn:
            return [
                (bytes(r.hash), r.state, int(r.size), float(r.marked_at))
                for r in conn.execute(
                    sa.select(
                        gc_marks.c.hash, gc_marks.c.state, gc_marks.c.size, gc_marks.c.marked_at
                    ).where(gc_marks.c.repo_id == repo_id, gc_marks.c.kind == kind)
                )
            ]

    def gc_unmark(self, repo_id: int, kind: str, hashes: Sequence[bytes]) -> None:
        """Forget marks (not claims nor tombstones) of things found in use again or gone."""
        for batch in self._batches(list(hashes)):
            with self._tx(write=True) as conn:
                conn.execute(
                    sa.delete(gc_marks).where(
                        gc_marks.c.repo_id == repo_id,
                        gc_marks.c.kind == kind,
                        gc_marks.c.state == "marked",
                        gc_marks.c.hash.in_(list(batch)),
                    )
                )

    def gc_eligible(self, repo_id: int, kind: str, grace: float) -> list[tuple[bytes, int]]:
        """(hash, size) of marks at least ``grace`` seconds old (by the catalog's clock)."""
        with self._tx() as conn:
            cutoff = self.now(conn) - grace
            return [
                (bytes(r.hash), int(r.size))
                for r in conn.execute(
                    sa.select(gc_marks.c.hash, gc_marks.c.size).where(
                        gc_marks.c.repo_id == repo_id,
                        gc_marks.c.kind == kind,
                        gc_marks.c.state == "marked",
                        gc_marks.c.marked_at <= cutoff,
                    )
                )
            ]

    def gc_claim(
        self, repo_id: int, run_id: str, hashes: Sequence[bytes], grace: float
    ) -> tuple[list[tuple[bytes, int]], list[tuple[bytes, int]]]:
        """Claim objects for deletion by gc run ``run_id``: (claimed, taken over).

        Claimed: marks of ``hashes`` still marked and at least ``grace`` seconds old. Taken
        over: claims of other runs (crashed or concurrent), whatever they were. Runs under
        the exclusive gc fence, so every session commit is wholly before it (and then visible
        to the liveness check that follows) or wholly after it (and then sees the claims).
        """
        m = gc_marks
        claimed: list[tuple[bytes, int]] = []
        with self._tx(write=True) as conn:
            dia.gc_fence(conn, repo_id, exclusive=True)
            cutoff = self.now(conn) - grace
            for batch in self._batches(list(hashes)):
                claimed += [
                    (bytes(r.hash), int(r.size))
                    for r in conn.execute(
                        sa.update(m)
                        .where(
                            m.c.repo_id == repo_id,
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
                        m.c.repo_id == repo_id,
                        m.c.kind == "object",
                        m.c.state == "deleting",
                        m.c.run_id != run_id,
                    )
                    .values(run_id=run_id)
                    .returning(m.c.hash, m.c.size)
                )
            ]
        return claimed, taken

    def gc_release(self, repo_id: int, run_id: str, hashes: Sequence[bytes]) -> list[bytes]:
        """Drop this run's claims on objects found in use; returns those still claimed by it
        (a claim another run took over is not this run's to release)."""
        released: list[bytes] = []
        m = gc_marks
        for batch in self._batches(list(hashes)):
            with self._tx(write=True) as conn:
                released += [
                    bytes(h)
                    for h in conn.execute(
                        sa.delete(m)
                        .where(
                            m.c.repo_id == repo_id,
                            m.c.kind == "object",
                            m.c.state == "deleting",
                            m.c.run_id == run_id,
                            m.c.hash.in_(list(batch)),
                        )
                        .returning(m.c.hash)
                    ).scalars()
                ]
        return released

    def gc_tombstone(self, repo_id: int, hashes: Sequence[bytes]) -> None:
        """Record claimed objects as deleted (now, by the catalog's clock)."""
        m = gc_marks
        for batch in self._batches(list(hashes)):
            with self._tx(write=True) as conn:
                conn.execute(
                    sa.update(m)
                    .where(
                        m.c.repo_id == repo_id,
                        m.c.kind == "object",
                        m.c.state == "deleting",
                        m.c.hash.in_(list(batch)),
                    )
                    .values(state="deleted", deleted_at=self.now(conn))
                )

    def gc_delete_blobs(self, repo_id: int, hashes: Sequence[bytes], grace: float) -> list[bytes]:
        """Delete catalog nodes whose mark is at least ``grace`` seconds old and that were not
        written again since they were marked; forget their marks. Returns the hashes deleted.

        The check and the delete are one statement, so a commit writing the same node is
        either before it (the node survives) or after it (the commit inserts it afresh).
        """
        m = gc_marks
        deleted: list[bytes] = []
        for batch in self._batches(list(hashes)):
            with self._tx(write=True) as conn:
                cutoff = self.now(conn) - grace
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
                        .where(blobs.c.repo_id == repo_id, blobs.c.hash.in_(list(batch)), unchanged)
                        .returning(blobs.c.hash)
                    ).scalars()
                ]
                conn.execute(
                    sa.delete(m).where(
                        m.c.repo_id == repo_id, m.c.kind == "blob", m.c.hash.in_(list(batch))
                    )
                )
        return deleted

    def gc_purge_tombstones(self, repo_id: int) -> int:
        """Forget deleted objects that no open session predates (none of those can be
        refused any more). Returns how many were forgotten."""
        m = gc_marks
        with self._tx(write=True) as conn:
            now = self.now(conn)
            oldest = conn.execute(
                sa.select(sa.func.min(sessions.c.created_at)).where(
                    sessions.c.repo_id == repo_id,
                    sessions.c.status == "open",
                    sessions.c.expires_at > now,
                )
            ).scalar()
            cond = [m.c.repo_id == repo_id, m.c.kind == "object", m.c.state == "deleted"]
            if oldest is not None:
                cond.append(m.c.deleted_at < float(oldest))
            return int(conn.execute(sa.delete(m).where(*cond)).rowcount)

    def _refuse_swept_objects(self, conn: sa.Connection, repo_id: int, session_id: str) -> None:
        """Refuse a session commit that stages an object gc is deleting, or deleted after the
        session began (the session may have deduplicated against it before it went)."""
        dia.gc_fence(conn, repo_id, exclusive=False)
        m = gc_marks
        any_claim = conn.execute(
            sa.select(m.c.hash)
            .where(
                m.c.repo_id == repo_id,
                m.c.kind == "object",
                m.c.state.in_(("deleting", "deleted")),
            )
            .limit(1)
        ).first()
        if any_claim is None:
            return
        began = (
            sa.select(sessions.c.created_at).where(sessions.c.id == session_id).scalar_subquery()
        )
        hits = conn.execute(
            sa.select(m.c.hash)
            .select_from(m.join(staged, staged.c.hash == m.c.hash))
            .where(
                staged.c.session_id == session_id,
                staged.c.kind.in_(("chunk", "raw")),
                staged.c.inline.is_(None),
                m.c.repo_id == repo_id,
                m.c.kind == "object",
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
