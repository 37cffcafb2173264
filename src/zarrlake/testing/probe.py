"""A look below a repo's public API, for tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.schema as schema
from zarrlake.catalog import catalog_for
from zarrlake.catalog.interface import CatalogApi
from zarrlake.core import CatalogReader, RepoCore, open_core
from zarrlake.model import Root
from zarrlake.model.records import CommitRecord
from zarrlake.objects import ObjectStore
from zarrlake.repo import Repo
from zarrlake.session.registry import registered_sessions

__all__ = ["LakeProbe", "live_sessions"]


def live_sessions() -> int:
    """How many writable session objects this process's registry holds."""
    return registered_sessions()


class LakeProbe:
    """A repo's engine parts, as tests inspect them."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.core: RepoCore = open_core(repo.config)

    @property
    def catalog(self) -> CatalogApi:
        """The repo's catalog interface (model values in and out)."""
        return self.core.catalog

    @property
    def reader(self) -> CatalogReader:
        return self.core.reader

    @property
    def objects(self) -> ObjectStore:
        return self.core.objects

    @property
    def repo_id(self) -> int:
        return self.core.repo_id

    # -- the catalog database ------------------------------------------------------------------

    tables: Any = SimpleNamespace(
        **{t.name.removeprefix("zl_"): t for t in schema.metadata.sorted_tables}
    )
    """The catalog's tables, by name without their ``zl_`` prefix (``probe.tables.sessions``)."""

    @contextmanager
    def sql(self) -> Iterator[sa.Connection]:
        """A transaction on the catalog database, for tests that inspect or damage rows."""
        with catalog_for(self.repo.config.catalog).engine.begin() as conn:
            yield conn

    def repos(self) -> list[str]:
        """The names of the repos in this repo's catalog."""
        return catalog_for(self.repo.config.catalog).list_repos()

    # -- commits, nodes and objects ------------------------------------------------------------

    def commit(self, ref: str) -> CommitRecord:
        return self.catalog.commits.get(self.repo.resolve(ref))

    def root(self, ref: str) -> Root:
        return self.reader.root(self.commit(ref).root_hash)

    def object_hashes(self) -> set[bytes]:
        """The hashes of every object in the object store (chunk objects and packs)."""
        return {o.hash for o in self.objects.iter_objects()}

    def node_hashes(self) -> set[bytes]:
        """The hashes of every catalog node of the repo."""
        return set(self.catalog.gc.blob_index())
