"""The catalog: a database of repos (:class:`Catalog`), each repo's view of it
(:class:`RepoCatalog`: one query object per concern, bound to the repo), and the per-process
registry of open catalogs.

One code path for SQLite and PostgreSQL (quirks in :mod:`zarrlake.catalog.dialect`, and the
commit's two forms in :mod:`zarrlake.catalog.publish`). Every public method is one
transaction. Branches move only by compare-and-swap::

    UPDATE zl_refs SET commit_id = :new WHERE repo_id = :r AND name = :b AND commit_id = :old
"""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from functools import cached_property
from typing import TYPE_CHECKING

import sqlalchemy as sa

import zarrlake.process as process
from zarrlake.catalog.commits import CommitQueries
from zarrlake.catalog.db import CatalogDb
from zarrlake.catalog.driver import Prepared
from zarrlake.catalog.nodes import NodeQueries
from zarrlake.catalog.refs import RefQueries
from zarrlake.catalog.schema import SCHEMA_VERSION, repos
from zarrlake.catalog.sources import SourceQueries
from zarrlake.errors import AlreadyExistsError, NotFoundError
from zarrlake.model.records import CommitRecord, RepoRecord

if TYPE_CHECKING:
    from zarrlake.catalog.gc import GcQueries
    from zarrlake.catalog.pulls import PullQueries
    from zarrlake.catalog.rules import RuleQueries
    from zarrlake.catalog.sessions import SessionQueries
    from zarrlake.catalog.writer import CommitWriter

__all__ = [
    "Catalog",
    "CatalogUpgrade",
    "RepoCatalog",
    "catalog_for",
    "forget_catalog",
    "upgrade_catalog",
]


class RepoCatalog:
    """One repo's view of its catalog: a query object per concern, each bound to the repo.

    What upper layers see of SQL: model values in, model values out. The concerns that
    reading a commit never needs (sessions, the commit writer, garbage collection, rules,
    pull requests) are loaded, with their statements, when first used.
    """

    def __init__(self, db: CatalogDb, repo_id: int) -> None:
        self.db = db
        self.repo_id = repo_id
        self.refs = RefQueries(db, repo_id)
        self.commits = CommitQueries(db, repo_id)
        self.nodes = NodeQueries(db, repo_id)
        self.sources = SourceQueries(db, repo_id)

    @cached_property
    def writer(self) -> CommitWriter:
        from zarrlake.catalog.writer import CommitWriter

        return CommitWriter(self.db, self.repo_id)

    @cached_property
    def sessions(self) -> SessionQueries:
        from zarrlake.catalog.sessions import SessionQueries

        return SessionQueries(self.db, self.repo_id)

    @cached_property
    def gc(self) -> GcQueries:
        from zarrlake.catalog.gc import GcQueries

        return GcQueries(self.db, self.repo_id)

    @cached_property
    def rules(self) -> RuleQueries:
        from zarrlake.catalog.rules import RuleQueries

        return RuleQueries(self.db, self.repo_id)

    @cached_property
    def pulls(self) -> PullQueries:
        from zarrlake.catalog.pulls import PullQueries

        return PullQueries(self.db, self.repo_id)

    @property
    def catalog_id(self) -> str:
        """Identifies the catalog database (a replaced database has another)."""
        return self.db.catalog_id

    def clock(self) -> float:
        """The catalog's current time (epoch seconds)."""
        return self.db.clock()

    def safe_url(self) -> str:
        return self.db.safe_url()


_GET_REPO = Prepared(
    sa.select(repos.c.id, repos.c.storage, repos.c.content_hash, repos.c.virtual_identity).where(
        repos.c.name == sa.bindparam("p_name")
    )
)


class Catalog(CatalogDb):
    """A catalog database: its repos."""

    def create_repo(
        self,
        name: str,
        storage: str,
        first: CommitRecord,
        root: bytes,
        content_hash: str,
        virtual_identity: str,
    ) -> int:
        """Create a repo with its first (empty) commit and its ``main`` branch, its chunk
        objects named by the content hash called ``content_hash`` and its virtual chunks by
        the identity called ``virtual_identity``."""
        with self.tx(write=True) as conn:
            if conn.execute(sa.select(repos.c.id).where(repos.c.name == name)).first():
                raise AlreadyExistsError(
                    f"repo {name!r} already exists in this catalog; open it with Repo.open"
                )
            now = self.now(conn)
            repo_id = int(
                conn.execute(
                    sa.insert(repos)
                    .values(
                        name=name,
                        storage=storage,
                        created_at=now,
                        content_hash=content_hash,
                        virtual_identity=virtual_identity,
                    )
                    .returning(repos.c.id)
                ).scalar_one()
            )
            from zarrlake.catalog.writer import write_first_commit

            write_first_commit(conn, repo_id, first, root, now)
            return repo_id

    def get_repo(self, name: str) -> RepoRecord:
        """A repo's id, storage URL, content hash and virtual identity."""
        with self.read() as conn:
            row = conn.execute(_GET_REPO, {"p_name": name}).first()
        if row is None:
            raise NotFoundError(
                f"no repo {name!r} in catalog {self.safe_url()}; "
                f"existing: {', '.join(self.list_repos()) or 'none'} (create one with "
                "zarrlake init or Repo.create)"
            )
        return RepoRecord(
            int(row.id), str(row.storage), str(row.content_hash), str(row.virtual_identity)
        )

    def list_repos(self) -> list[str]:
        with self.read() as conn:
            return [r[0] for r in conn.execute(sa.select(repos.c.name).order_by(repos.c.name))]

    def repo(self, repo_id: int) -> RepoCatalog:
        return RepoCatalog(self, repo_id)


_catalogs: MutableMapping[str, Catalog] = process.registry("catalogs")
_catalogs_lock = threading.Lock()


def catalog_for(url: str, *, create: bool = False) -> Catalog:
    """This process's :class:`Catalog` for a URL (one engine per process and URL).

    A cached catalog whose database was removed or replaced since (a SQLite file deleted or
    recreated, a PostgreSQL database dropped and created again) is closed and opened afresh.
    Only ``create=True`` makes the catalog's tables in a database that has none.
    """
    with _catalogs_lock:
        cat = _catalogs.get(url)
        if cat is not None and cat.is_stale():
            del _catalogs[url]
            cat.engine.dispose()
            cat = None
        if cat is None:
            cat = _catalogs[url] = Catalog(url, create=create)
        return cat


def forget_catalog(url: str) -> None:
    """Close and drop this process's engine for ``url``."""
    with _catalogs_lock:
        cat = _catalogs.pop(url, None)
    if cat is not None:
        cat.engine.dispose()


def _after_fork_in_child() -> None:
    # Pooled connections belong to the parent; the child must open its own (SQLAlchemy's
    # documented recipe). The registry is emptied next, so the child opens new catalogs.
    for cat in list(_catalogs.values()):
        cat.engine.dispose(close=False)


process.on_fork(_after_fork_in_child)


class CatalogUpgrade:
    """What :func:`upgrade_catalog` did."""

    def __init__(self, url: str, before: int, applied: list[int]) -> None:
        self.url = url
        self.before = before
        self.after = SCHEMA_VERSION
        self.applied = applied

    def __repr__(self) -> str:
        if not self.applied:
            return f"<CatalogUpgrade {self.url}: already at schema version {self.after}>"
        return f"<CatalogUpgrade {self.url}: schema version {self.before} -> {self.after}>"


def upgrade_catalog(url: str) -> CatalogUpgrade:
    """Upgrade a catalog's schema to this release's version, in one transaction."""
    forget_catalog(url)
    db = Catalog(url, create=False, check_version=False)
    try:
        before, applied = db.upgrade()
    finally:
        db.engine.dispose()
    return CatalogUpgrade(db.safe_url(), before, applied)
