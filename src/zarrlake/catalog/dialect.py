"""Every difference between SQLite and PostgreSQL lives here."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from zarrlake.catalog.driver import DriverTx
from zarrlake.types import parse_catalog_url, safe_url

__all__ = [
    "configure_engine",
    "gc_fence",
    "gc_fence_column",
    "insert_ignore",
    "is_busy_error",
    "make_engine",
    "now_column",
    "now_sql",
    "safe_url",
    "schema_lock",
    "sqlite_file",
    "upsert",
]


def sqlite_file(url: str) -> str | None:
    """The absolute path of a SQLite catalog's file (``None`` for other databases)."""
    parsed = parse_catalog_url(url)
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
    """An engine for a catalog URL, configured for concurrent transactional use.

    The pool hands out the connection returned last (``pool_use_lifo``): a process that
    sends one statement at a time keeps using one connection, whose prepared statements
    (psycopg prepares a statement sent five times on a connection; sqlite3 keeps its
    statements per connection) are then ready, where a pool taking turns would spread each
    statement over every connection it holds. Connections left idle are checked before use
    (:func:`ping_when_idle`)."""
    parsed = parse_catalog_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            poolclass=sa.pool.QueuePool,
            pool_size=8,
            max_overflow=16,
            pool_use_lifo=True,
        )
        configure_engine(engine)
        return engine
    from zarrlake.catalog.pg_arrays import send_binary  # psycopg: PostgreSQL catalogs only

    engine = sa.create_engine(parsed, pool_size=8, max_overflow=16, pool_use_lifo=True)
    send_binary(engine)
    ping_when_idle(engine)
    return engine


# A pooled connection idle longer than this is checked (one round trip) before it is handed out.
_PING_AFTER_IDLE_S = 1.0


def ping_when_idle(engine: sa.Engine) -> None:
    """Check a pooled connection before use only if it sat idle in the pool (SQLAlchemy's
    ``pool_pre_ping`` pings on every checkout: one round trip per transaction).

    A server restart or an idle timeout drops idle connections; those are caught here and
    replaced before anything is sent. A connection used less than a second ago was alive
    then, so a busy process pays no extra round trip; if the server went away since, the
    statement fails with a :class:`CatalogError`, the pool drops every connection older than
    the failure, and the next call opens a new one.
    """

    @sa.event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["zl_idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("zl_idle_since")
        if since is None or time.monotonic() - since < _PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as exc:
            # the pool discards this connection and checks out another (SQLAlchemy's
            # documented pessimistic-ping recipe)
            raise sa.exc.DisconnectionError(f"stale pooled connection: {exc}") from exc


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
        if conn.get_execution_options().get("zl_single", False):
            return  # in a transaction the driver began (catalog.driver.DriverTx.sa)
        conn.exec_driver_sql("BEGIN")


def now_sql(dialect: str) -> sa.TextClause:
    """The catalog's clock, as epoch seconds with sub-millisecond resolution."""
    if dialect == "sqlite":
        return sa.text("SELECT (julianday('now') - 2440587.5) * 86400.0")
    return sa.text("SELECT extract(epoch from clock_timestamp())::float8")


def now_column(dialect: str) -> sa.ColumnElement[float]:
    """The catalog's clock (as :func:`now_sql`) as a column, to fold into another query."""
    if dialect == "sqlite":
        expr = "(julianday('now') - 2440587.5) * 86400.0"
    else:
        expr = "extract(epoch from clock_timestamp())::float8"
    return sa.literal_column(expr, sa.Float).label("now")


def upsert(table: sa.Table, dialect: str, update_cols: Sequence[str]) -> Any:
    """INSERT ... ON CONFLICT (primary key) DO UPDATE SET cols = excluded.cols (built once
    per table, dialect and columns: a commit's nodes are stored with it)."""
    return _upsert(table, dialect, tuple(update_cols))


@functools.lru_cache(maxsize=64)
def _upsert(table: sa.Table, dialect: str, update_cols: tuple[str, ...]) -> Any:
    ins = dialect_insert(table, dialect)
    pk = [c.name for c in table.primary_key.columns]
    return ins.on_conflict_do_update(
        index_elements=pk, set_={c: getattr(ins.excluded, c) for c in update_cols}
    )


def insert_ignore(table: sa.Table, dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING (create-if-absent for content-addressed rows)."""
    return dialect_insert(table, dialect).on_conflict_do_nothing()


def dialect_insert(table: sa.Table, dialect: str) -> Any:
    """The dialect's own INSERT, which has ``ON CONFLICT``. SQLAlchemy's PostgreSQL module
    is loaded only by a process that uses a PostgreSQL catalog (about 20 ms of start-up)."""
    if dialect == "sqlite":
        return sqlite.insert(table)
    from sqlalchemy.dialects import postgresql

    return postgresql.insert(table)


def schema_lock(conn: DriverTx) -> None:
    """Serialize schema creation between processes (SQLite's BEGIN IMMEDIATE already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7269837456)"))


def gc_fence(conn: DriverTx, repo_id: int, *, exclusive: bool) -> None:
    """Order session commits (shared) against garbage collection claiming objects (exclusive).

    PostgreSQL runs them concurrently, so they take a transaction-scoped advisory lock per
    repo; SQLite already runs one writing transaction at a time.
    """
    if conn.dialect.name == "postgresql":
        fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        conn.execute(sa.text(f"SELECT {fn}(7269837, :repo)"), {"repo": repo_id})


def gc_fence_column(
    dialect: str, repo_id: int | sa.ColumnElement[int]
) -> sa.ColumnElement[Any] | None:
    """The shared gc fence (:func:`gc_fence`) as a column of a query that needs nothing from
    the snapshot it reads after the lock (``None`` on SQLite, which needs no fence).

    PostgreSQL takes a statement's snapshot before the lock is granted: anything that must
    see what gc committed before the fence (its claims) is read by a later statement."""
    if dialect == "sqlite":
        return None
    return sa.func.pg_advisory_xact_lock_shared(sa.literal(7269837), repo_id).label("fence")


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
