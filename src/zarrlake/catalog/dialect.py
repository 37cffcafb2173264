"""Every difference between SQLite and PostgreSQL lives here."""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from zarrlake.types import safe_url

__all__ = [
    "configure_engine",
    "gc_fence",
    "insert_ignore",
    "is_busy_error",
    "make_engine",
    "now_sql",
    "safe_url",
    "schema_lock",
    "sqlite_file",
    "upsert",
]


def sqlite_file(url: str) -> str | None:
    """The absolute path of a SQLite catalog's file (``None`` for other databases)."""
    parsed = sa.make_url(url)
    db = parsed.database
    if (
        parsed.get_backend_name() != "sqlite"
        or not db
        or db == ":memory:"
        or db.startswith("file:")
    ):
        return None
    return os.path.abspath(db)


_SQLITE_BUSY_TIMEOUT_MS = 60_000


def make_engine(url: str) -> sa.Engine:
    """An engine for a catalog URL, configured for concurrent transactional use."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            poolclass=sa.pool.QueuePool,
            pool_size=8,
            max_overflow=16,
        )
        configure_engine(engine)
        return engine
    return sa.create_engine(parsed, pool_pre_ping=True, pool_size=8, max_overflow=16)


def configure_engine(engine: sa.Engine) -> None:
    if engine.dialect.name != "sqlite":
        return

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's begin event decide how transactions start (pysqlite would
        # otherwise begin lazily and deferred, which deadlocks writers that read first).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL never corrupts and never loses a transaction to a process crash;
        # a power loss may roll back the last transactions, never tear one.
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("zl_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def now_sql(dialect: str) -> sa.TextClause:
    """The catalog's clock, as epoch seconds with sub-millisecond resolution."""
    if dialect == "sqlite":
        return sa.text("SELECT (julianday('now') - 2440587.5) * 86400.0")
    return sa.text("SELECT extract(epoch from clock_timestamp())::float8")


def upsert(table: sa.Table, dialect: str, update_cols: list[str]) -> Any:
    """INSERT ... ON CONFLICT (primary key) DO UPDATE SET cols = excluded.cols."""
    ins: Any = sqlite.insert(table) if dialect == "sqlite" else postgresql.insert(table)
    pk = [c.name for c in table.primary_key.columns]
    return ins.on_conflict_do_update(
        index_elements=pk, set_={c: getattr(ins.excluded, c) for c in update_cols}
    )


def insert_ignore(table: sa.Table, dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING (create-if-absent for content-addressed rows)."""
    ins: Any = sqlite.insert(table) if dialect == "sqlite" else postgresql.insert(table)
    return ins.on_conflict_do_nothing()


def schema_lock(conn: sa.Connection) -> None:
    """Serialize schema creation between processes (SQLite's BEGIN IMMEDIATE already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7269837456)"))


def gc_fence(conn: sa.Connection, repo_id: int, *, exclusive: bool) -> None:
    """Order session commits (shared) against garbage collection claiming objects (exclusive).

    PostgreSQL runs them concurrently, so they take a transaction-scoped advisory lock per
    repo; SQLite already runs one writing transaction at a time.
    """
    if conn.dialect.name == "postgresql":
        fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        conn.execute(sa.text(f"SELECT {fn}(7269837, :repo)"), {"repo": repo_id})


def is_unique_violation(exc: BaseException) -> bool:
    """Whether an integrity error is a duplicate key (PostgreSQL 23505, SQLite UNIQUE)."""
    orig = getattr(exc, "orig", exc)
    if getattr(orig, "sqlstate", None) == "23505":
        return True
    text = str(orig)
    return "UNIQUE constraint failed" in text or "duplicate key value" in text


def is_read_only_error(exc: BaseException) -> bool:
    """Whether the database refused a write for lack of rights (PostgreSQL 42501 or a
    read-only transaction 25006; SQLite's read-only database)."""
    orig = getattr(exc, "orig", exc)
    if getattr(orig, "sqlstate", None) in ("42501", "25006"):
        return True
    return "readonly database" in str(orig) or "read-only" in str(orig).lower()


def is_busy_error(exc: BaseException) -> bool:
    """Whether a database error is a transient lock/serialization failure worth retrying."""
    text = str(getattr(exc, "orig", exc)).lower()
    return any(
        s in text
        for s in (
            "database is locked",
            "could not serialize",
            "deadlock detected",
            "database is busy",
        )
    )
