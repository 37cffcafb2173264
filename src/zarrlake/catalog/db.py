"""The catalog database: engine, transactions, identity and schema version, and the base of
the per-concern query objects (each bound to one repo of one database)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.driver import DriverTx, Prepared, Watcher, transaction
from zarrlake.catalog.schema import (
    SCHEMA_VERSION,
    blobs,
    info,
    metadata,
    reads,
    staged,
    tune_storage,
)
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    NotFoundError,
    PermissionDeniedError,
    SchemaVersionError,
)

__all__ = ["CatalogDb", "Scoped", "one_line"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def one_line(text: object) -> str:
    """A driver's message on one line (PostgreSQL's span several, with indented details)."""
    return re.sub(r"\s*\n\s*", "; ", str(text).strip())


def _check_sqlite_file(file: str, create: bool) -> None:
    """Refuse a path that is not a SQLite database before SQLite writes a header into it."""
    if not os.path.exists(file):
        if create:
            return
        raise NotFoundError(f"no zarrlake catalog at {file}")
    if os.path.isdir(file):
        raise CatalogError(f"{file} is a directory, not a catalog file; choose another path")
    try:
        with open(file, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise CatalogError(f"cannot read catalog file {file}: {exc.strerror}") from exc
    if not head:
        raise NotFoundError(
            f"no zarrlake catalog in {file}: the file is empty. Nothing was changed; choose "
            "another path, or remove the file"
        )
    if head != _SQLITE_MAGIC:
        raise CatalogError(
            f"{file} is not a zarrlake catalog (not a SQLite database: another program wrote "
            "it). Nothing was changed; choose another path, or move the file away"
        )


class CatalogDb:
    """A connection to one catalog database (which may hold many repos).

    Opening it checks that it is a zarrlake catalog of this release's schema version; it
    never changes the schema (``upgrade`` does, when called).
    """

    def __init__(self, url: str, *, create: bool = False, check_version: bool = True) -> None:
        """Connect to the catalog at ``url``; with ``create``, make its tables if it has none
        (else an empty or foreign database is refused with :class:`NotFoundError`)."""
        self.url = url
        self.file = dia.sqlite_file(url)
        if self.file is not None:
            _check_sqlite_file(self.file, create)
        try:
            self.engine = dia.make_engine(url)
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError, ValueError) as exc:
            raise CatalogError(
                f"cannot use catalog URL {dia.safe_url(url)!r}: {one_line(exc)}. Use "
                "sqlite:///path/to/file.db or postgresql+psycopg://user@host:5432/db "
                "(pip install 'zarrlake[postgres]')"
            ) from exc
        self.dialect = self.engine.dialect.name
        self._file_id: tuple[int, int] | None = None
        self._now = Prepared(dia.now_sql(self.dialect))
        self._watchers: list[Watcher] = []
        self._driver_error: type[Exception] = self.engine.dialect.loaded_dbapi.Error
        self.upsert_staged = Prepared(
            dia.upsert(
                staged,
                self.dialect,
                ["hash", "length", "inline", "pack", "pack_offset", "crc", "source"],
            )
        )
        # Writing a blob that exists refreshes its created_at: garbage collection deletes a
        # blob only if it was not written again since it was marked (docs/history.md).
        self.insert_blob = Prepared(dia.upsert(blobs, self.dialect, ["created_at"]))
        self.insert_read = Prepared(dia.insert_ignore(reads, self.dialect))
        self._ensure_schema(create, check_version)
        self._file_id = self._stat_file()
        self.catalog_id = self._read_catalog_id()

    # -- identity: a cached connection must never serve a catalog that was replaced ------------

    def _stat_file(self) -> tuple[int, int] | None:
        if self.file is None:
            return None
        try:
            st = os.stat(self.file)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def is_stale(self) -> bool:
        """Whether this connection's database is gone or was replaced by another (a SQLite
        file removed or recreated; a PostgreSQL database dropped and created again)."""
        if self.file is not None:
            return self._stat_file() != self._file_id
        try:
            return self._read_catalog_id() != self.catalog_id
        except CatalogError:
            return True

    def _read_catalog_id(self) -> str:
        with self.read() as conn:
            found = conn.execute(sa.select(info.c.value).where(info.c.key == "catalog_id")).scalar()
        return str(found or "")

    def refuse_identity(self, catalog_id: str | None, version: str | None) -> None:
        """Refuse to write through a connection whose database was replaced underneath, or
        whose schema was upgraded past what this release knows (values read by the caller's
        query: the commit's first statement reads them with the clock and the session)."""
        if (catalog_id or "") != self.catalog_id:
            raise CatalogError(
                f"catalog {self.safe_url()} was replaced since this process opened it; "
                "open the repo again"
            )
        if version != str(SCHEMA_VERSION):
            raise SchemaVersionError(
                f"catalog {self.safe_url()} was changed to schema version {version} while this "
                f"process had it open (this zarrlake knows {SCHEMA_VERSION}); nothing was "
                "written. Use a zarrlake that matches the catalog's schema"
            )

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def tx(self, write: bool = False, *, single: bool = False) -> Iterator[DriverTx]:
        """One transaction on the driver's connection (:mod:`.driver`); translates driver
        errors to :class:`CatalogError` (cause kept).

        Lock waits are the database's job (SQLite's busy timeout, PostgreSQL's row locks).
        ``single``: see :meth:`read`.
        """
        if self._file_id is not None and self._stat_file() != self._file_id:
            raise CatalogError(
                f"catalog file {self.file} was removed or replaced since this process opened "
                "it; open the repo again"
            )
        try:
            with transaction(
                self.engine, write=write, single=single, watchers=self._watchers
            ) as conn:
                yield conn
        except (sa.exc.DBAPIError, self._driver_error) as exc:
            raise self._translated(exc) from exc

    def _translated(self, exc: Exception) -> Exception:
        """A driver error (raw, or wrapped by SQLAlchemy) as an error of our tree."""
        orig: BaseException = exc
        if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None:
            orig = exc.orig
        dbapi = self.engine.dialect.loaded_dbapi
        if isinstance(exc, sa.exc.IntegrityError) or isinstance(orig, dbapi.IntegrityError):
            if dia.is_unique_violation(orig):
                # two processes created the same repo, branch or tag at once: one won
                return AlreadyExistsError(
                    f"it was created by another process at the same moment ({one_line(orig)})"
                )
        elif dia.is_read_only_error(orig):
            return PermissionDeniedError(
                f"catalog {self.safe_url()} refuses writes through this connection (a "
                "read-only file or a database role without write rights): nothing was "
                f"changed. Open it with write access to change it ({one_line(orig)})"
            )
        return CatalogError(f"catalog {self.safe_url()} failed: {one_line(orig)}")

    @contextmanager
    def watch(self, watcher: Watcher) -> Iterator[None]:
        """Tell ``watcher`` every statement this catalog sends while the block runs (its SQL
        and parameters), by either path: statement counts in tests and ``bench/``."""

        def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            watcher(statement, parameters)

        self._watchers.append(watcher)
        sa.event.listen(self.engine, "before_cursor_execute", seen)
        try:
            yield
        finally:
            sa.event.remove(self.engine, "before_cursor_execute", seen)
            self._watchers.remove(watcher)

    @contextmanager
    def read(self) -> Iterator[DriverTx]:
        """A connection for ONE read statement, sent outside an explicit transaction.

        A single statement is atomic and reads one snapshot by itself, so the transaction's
        BEGIN and COMMIT are only round trips (two of them on PostgreSQL). Use :meth:`tx` for
        anything that sends two statements or writes. Errors are translated as in :meth:`tx`.
        """
        with self.tx(single=True) as conn:
            yield conn

    def safe_url(self) -> str:
        """The catalog URL without its password."""
        return dia.safe_url(self.url)

    def now(self, conn: DriverTx) -> float:
        return float(conn.execute(self._now).scalar_one())

    def clock(self) -> float:
        """The catalog's current time (epoch seconds)."""
        with self.read() as conn:
            return self.now(conn)

    # -- schema --------------------------------------------------------------------------------

    def _ensure_schema(self, create: bool, check_version: bool) -> None:
        try:
            with self.engine.connect() as conn:
                tables = sa.inspect(conn).get_table_names()
        except sa.exc.DBAPIError as exc:
            raise CatalogError(
                f"cannot open catalog {self.safe_url()}: {one_line(exc.orig)}"
            ) from exc
        if "zl_info" in tables:
            if check_version:
                self._refuse_other_version(self.schema_version())
            return
        if not create:
            raise NotFoundError(
                f"{self.safe_url()} holds no zarrlake catalog (create a repo in it with "
                "zarrlake init or Repo.create)"
            )
        foreign = [t for t in tables if not t.startswith("zl_")]
        if self.file is not None and foreign:
            raise CatalogError(
                f"{self.file} is a database of another program (tables: "
                f"{', '.join(sorted(foreign)[:5])}); choose another file for the catalog"
            )
        import uuid

        with self.tx(write=True) as conn:
            dia.schema_lock(conn)
            metadata.create_all(conn.sa, checkfirst=True)
            tune_storage(conn.sa)
            conn.execute(
                dia.insert_ignore(info, self.dialect),
                [
                    {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                    {"key": "catalog_id", "value": uuid.uuid4().hex},
                ],
            )

    def _version_in(self, conn: DriverTx) -> int:
        v = conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).scalar()
        if v is None or not v.isdigit() or int(v) < 1:
            raise SchemaVersionError(
                f"catalog {self.safe_url()} records schema version "
                f"{'nothing' if v is None else repr(v)}, which is not a version zarrlake ever "
                "wrote: the catalog is damaged (or not zarrlake's). Nothing was changed; "
                "restore it from a backup"
            )
        return int(v)

    def schema_version(self) -> int:
        """The schema version the catalog records (:class:`SchemaVersionError` if damaged)."""
        with self.read() as conn:
            return self._version_in(conn)

    def _refuse_other_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"catalog {self.safe_url()} has schema version {version}, newer than this "
                f"zarrlake knows ({SCHEMA_VERSION}); nothing was changed. Upgrade zarrlake"
            )
        if version < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"catalog {self.safe_url()} has schema version {version}; this zarrlake needs "
                f"version {SCHEMA_VERSION}. Nothing was changed. Upgrade the catalog with "
                "`zarrlake catalog upgrade` (or zarrlake.upgrade_catalog(...)) once every "
                "client that uses it runs this zarrlake"
            )

    def upgrade(self) -> tuple[int, list[int]]:
        """Upgrade the schema to this release's version, in one transaction: (the version it
        had, the versions applied)."""
        with self.tx(write=True) as conn:
            dia.schema_lock(conn)
            start = self._version_in(conn)
            if start > SCHEMA_VERSION:
                self._refuse_other_version(start)
            import zarrlake.catalog.migrations as migrations  # only an upgrade needs them

            applied = migrations.run(conn.sa, start, SCHEMA_VERSION)
            conn.execute(
                sa.update(info)
                .where(info.c.key == "schema_version")
                .values(value=str(SCHEMA_VERSION))
            )
        return start, applied


class Scoped:
    """Queries of one concern, bound to one repo of one catalog database."""

    def __init__(self, db: CatalogDb, repo_id: int) -> None:
        self.db = db
        self.repo_id = repo_id
