"""The catalog's plumbing: engine, transactions, schema, identity, repos and content-addressed
nodes. The query modules (refs, commits, sessions, gc) build on this class."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.rows import CommitRow, batches
from zarrlake.catalog.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    blobs,
    commits,
    info,
    metadata,
    reads,
    reflog,
    refs,
    repos,
    staged,
    tune_storage,
)
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    NotFoundError,
    SchemaVersionError,
)

__all__ = ["CatalogBase"]


class CatalogBase:
    """A connection to one catalog database (which may hold many repos)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        """Connect to the catalog at ``url``; with ``create``, make its tables if it has none
        (else an empty or foreign database is refused with :class:`NotFoundError`)."""
        self.url = url
        file = dia.sqlite_file(url)
        if file is not None and not create and not os.path.isfile(file):
            raise NotFoundError(f"no zarrlake catalog at {file}")
        try:
            self.engine = dia.make_engine(url)
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
            raise CatalogError(
                f"cannot use catalog URL {dia.safe_url(url)!r}: {exc}. Use "
                "sqlite:///path/to/file.db or postgresql+psycopg://user@host/db "
                "(pip install 'zarrlake[postgres]')"
            ) from exc
        self.dialect = self.engine.dialect.name
        self._file = dia.sqlite_file(url)
        self._file_id: tuple[int, int] | None = None
        self._now = dia.now_sql(self.dialect)
        self.upsert_staged = dia.upsert(
            staged, self.dialect, ["hash", "length", "inline", "pack", "pack_offset", "crc"]
        )
        # Writing a blob that exists refreshes its created_at: garbage collection deletes a
        # blob only if it was not written again since it was marked (docs/history.md).
        self.insert_blob = dia.upsert(blobs, self.dialect, ["created_at"])
        self.insert_read = dia.insert_ignore(reads, self.dialect)
        self.ensure_schema(create)
        self._file_id = self._stat_file()
        self.catalog_id = self._read_catalog_id()

    # -- identity: a cached connection must never serve a catalog that was replaced ------------

    def _stat_file(self) -> tuple[int, int] | None:
        if self._file is None:
            return None
        try:
            st = os.stat(self._file)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def is_stale(self) -> bool:
        """Whether this connection's database is gone or was replaced by another (a SQLite
        file removed or recreated; a PostgreSQL database dropped and created again)."""
        if self._file is not None:
            return self._stat_file() != self._file_id
        try:
            return self._read_catalog_id() != self.catalog_id
        except CatalogError:
            return True

    def _read_catalog_id(self) -> str:
        with self.read() as conn:
            return self.read_catalog_id(conn)

    @staticmethod
    def read_catalog_id(conn: sa.Connection) -> str:
        found = conn.execute(sa.select(info.c.value).where(info.c.key == "catalog_id")).scalar()
        return str(found or "")

    def check_identity(self, conn: sa.Connection) -> None:
        """Refuse to write through a connection whose database was replaced underneath, or
        whose schema another process upgraded past what this release knows (one query)."""
        found = dict(
            conn.execute(
                sa.select(info.c.key, info.c.value).where(
                    info.c.key.in_(("catalog_id", "schema_version"))
                )
            ).all()
        )
        self.refuse_identity(found.get("catalog_id"), found.get("schema_version"))

    def refuse_identity(self, catalog_id: str | None, version: str | None) -> None:
        """:meth:`check_identity` on values read by a query of the caller's (the commit's
        first statement reads them with the clock and the session)."""
        if (catalog_id or "") != self.catalog_id:
            raise CatalogError(
                f"catalog {self.safe_url()} was replaced since this process opened it; "
                "open the repo again"
            )
        version = version or "0"
        if not version.isdigit() or int(version) > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"catalog {self.safe_url()} was upgraded to schema version {version} by a newer "
                f"zarrlake while this process had it open (this one knows {SCHEMA_VERSION}); "
                "nothing was written. Upgrade zarrlake"
            )

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def tx(self, write: bool = False, *, single: bool = False) -> Iterator[sa.Connection]:
        """One transaction; translates driver errors to :class:`CatalogError` (cause kept).

        Lock waits are the database's job (SQLite's busy timeout, PostgreSQL's row locks).
        ``single``: see :meth:`read`.
        """
        if self._file_id is not None and self._stat_file() != self._file_id:
            raise CatalogError(
                f"catalog file {self._file} was removed or replaced since this process opened "
                "it; open the repo again"
            )
        try:
            with self.engine.connect() as conn:
                if single:
                    conn = conn.execution_options(**dia.read_options(self.dialect))
                    yield conn
                    return
                if write:
                    conn = conn.execution_options(zl_write=True)
                with conn.begin():
                    yield conn
        except sa.exc.IntegrityError as exc:
            if dia.is_unique_violation(exc):
                # two processes created the same repo, branch or tag at once: one won
                raise AlreadyExistsError(
                    f"it was created by another process at the same moment ({exc.orig})"
                ) from exc
            raise CatalogError(f"catalog {self.safe_url()} failed: {exc.orig}") from exc
        except sa.exc.DBAPIError as exc:
            if dia.is_read_only_error(exc):
                raise CatalogError(
                    f"catalog {self.safe_url()} refuses writes through this connection (a "
                    "read-only file or a database role without write rights): nothing was "
                    f"changed. Open it with write access to change it ({exc.orig})"
                ) from exc
            raise CatalogError(f"catalog {self.safe_url()} failed: {exc.orig}") from exc

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
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

    def now(self, conn: sa.Connection) -> float:
        return float(conn.execute(self._now).scalar_one())

    def clock(self) -> float:
        """The catalog's current time (epoch seconds)."""
        with self.read() as conn:
            return self.now(conn)

    def ensure_schema(self, create: bool = True) -> None:
        try:
            with self.engine.connect() as conn:
                tables = sa.inspect(conn).get_table_names()
            if "zl_info" in tables:
                self.check_version()
                return
            if not create:
                raise NotFoundError(
                    f"{self.safe_url()} holds no zarrlake catalog (create a repo in it with "
                    "Repo.create)"
                )
            foreign = [t for t in tables if not t.startswith("zl_")]
            if self._file is not None and foreign:
                raise CatalogError(
                    f"{self._file} is a database of another program (tables: "
                    f"{', '.join(sorted(foreign)[:5])}); choose another file for the catalog"
                )
            with self.tx(write=True) as conn:
                dia.schema_lock(conn)
                metadata.create_all(conn, checkfirst=True)
                tune_storage(conn)
                conn.execute(
                    dia.insert_ignore(info, self.dialect),
                    [
                        {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                        {"key": "catalog_id", "value": uuid.uuid4().hex},
                    ],
                )
        except sa.exc.DBAPIError as exc:
            raise CatalogError(f"cannot open catalog {self.safe_url()}: {exc.orig}") from exc
        self.check_version()

    def check_version(self) -> None:
        with self.read() as conn:
            v = conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).scalar()
        try:
            version = int(v or 0)
        except ValueError:
            raise SchemaVersionError(
                f"catalog {self.safe_url()} records schema version {v!r}, which is not a "
                "number: the catalog is damaged or not zarrlake's"
            ) from None
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"catalog schema version {version} is newer than this zarrlake supports "
                f"({SCHEMA_VERSION}); upgrade zarrlake"
            )
        if version < SCHEMA_VERSION:
            self.migrate()

    def migrate(self) -> int:
        """Upgrade the catalog schema to this release's version; returns the version."""
        with self.tx(write=True) as conn:
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
        with self.tx(write=True) as conn:
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
            first = CommitRow(
                commit_id, None, None, root_hash, None, author, "Repository initialized", {}, now, 0
            )
            self.write_commit_row(conn, repo_id, first, {root_hash: ("root", root_data)}, now)
            conn.execute(
                sa.insert(refs).values(
                    repo_id=repo_id, name="main", kind="branch", commit_id=commit_id, updated_at=now
                )
            )
            self.log_ref(conn, repo_id, "main", "create", None, commit_id, author, now, "")
            return repo_id

    def get_repo(self, name: str) -> tuple[int, str]:
        with self.read() as conn:
            row = conn.execute(
                sa.select(repos.c.id, repos.c.storage).where(repos.c.name == name)
            ).first()
        if row is None:
            raise NotFoundError(
                f"no repo {name!r} in catalog {self.safe_url()}; "
                f"existing: {self.list_repos() or 'none'} (create one with Repo.create)"
            )
        return int(row.id), str(row.storage)

    def list_repos(self) -> list[str]:
        with self.read() as conn:
            return [r[0] for r in conn.execute(sa.select(repos.c.name).order_by(repos.c.name))]

    # -- content-addressed nodes ---------------------------------------------------------------

    # -- commits and refs: the rows every commit writes ----------------------------------------

    def write_commit_row(
        self,
        conn: sa.Connection,
        repo_id: int,
        row: CommitRow,
        new_blobs: dict[bytes, tuple[str, bytes]],
        now: float,
    ) -> None:
        """Insert a commit and the content-addressed nodes it introduces. The only place a
        commit row is written."""
        self.put_blobs_in(conn, repo_id, new_blobs, now)
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

    def cas(
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

    def log_ref(
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

    # -- content-addressed nodes ---------------------------------------------------------------

    def put_blobs_in(
        self, conn: sa.Connection, repo_id: int, items: dict[bytes, tuple[str, bytes]], now: float
    ) -> None:
        if items:
            conn.execute(
                self.insert_blob,
                [
                    {"repo_id": repo_id, "hash": h, "kind": k, "data": d, "created_at": now}
                    for h, (k, d) in items.items()
                ],
            )

    def put_blobs(self, repo_id: int, items: dict[bytes, tuple[str, bytes]]) -> None:
        with self.tx(write=True) as conn:
            self.put_blobs_in(conn, repo_id, items, self.now(conn))

    def get_blob(self, repo_id: int, h: bytes) -> bytes:
        with self.read() as conn:
            data = conn.execute(
                sa.select(blobs.c.data).where(blobs.c.repo_id == repo_id, blobs.c.hash == h)
            ).scalar()
        if data is None:
            raise CatalogError(f"catalog node {h.hex()} is missing; run repo.fsck()")
        return bytes(data)

    # -- commits -------------------------------------------------------------------------------

    def get_blobs(self, repo_id: int, hashes: Sequence[bytes]) -> dict[bytes, tuple[str, bytes]]:
        """Several catalog nodes at once: hash -> (kind, bytes); missing ones are left out."""
        out: dict[bytes, tuple[str, bytes]] = {}
        for batch in batches(list(hashes)):
            with self.read() as conn:
                for r in conn.execute(
                    sa.select(blobs.c.hash, blobs.c.kind, blobs.c.data).where(
                        blobs.c.repo_id == repo_id, blobs.c.hash.in_(list(batch))
                    )
                ):
                    out[bytes(r.hash)] = (r.kind, bytes(r.data))
        return out
