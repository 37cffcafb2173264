"""``RepoCore``: what every operation on an open repo needs, and the per-process cache of them.

A cached core is reused only while it still describes the repo in the catalog: the catalog
database must be the same one (not a file or database that replaced it) and the repo's row the
same. So a repo deleted and created again at the same place, or replaced by another process,
is never served from a stale cache.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zarrlake.process as process
from zarrlake.catalog import RepoCatalog, catalog_for
from zarrlake.catalog.dialect import sqlite_file
from zarrlake.catalog.interface import CatalogApi
from zarrlake.core.reader import CatalogReader
from zarrlake.errors import ObjectMissingError
from zarrlake.model import ChunkRef, Root, content_hash
from zarrlake.model.hashing import ChunkHasher, chunk_hasher
from zarrlake.model.records import CommitRecord, RepoRecord
from zarrlake.model.virtual import DEFAULT_VIRTUAL_IDENTITY
from zarrlake.objects import ObjectStore, open_object_store
from zarrlake.objects.sources import SourceReader
from zarrlake.types import RepoConfig, new_commit_id

__all__ = ["RepoCore", "create_core", "forget_cores", "open_core", "resolve_storage"]


@dataclass(frozen=True, eq=False, slots=True)
class RepoCore:
    """One open repo: its configuration, catalog, id, object store and node cache."""

    config: RepoConfig
    catalog: CatalogApi
    storage: str  # as the catalog records it
    objects: ObjectStore
    reader: CatalogReader
    # the repo's content hash: what names and verifies its chunk objects (the object store
    # has the same one)
    hasher: ChunkHasher
    # the name of the function naming its virtual chunks (zarrlake.model.virtual)
    virtual_identity: str
    sources: SourceReader = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # the gate, reader and namer of virtual chunks' sources (allowed prefixes from the
        # catalog, secret options from the configuration)
        object.__setattr__(
            self,
            "sources",
            SourceReader(
                self.catalog.sources.all, self.config.source_options, self.virtual_identity
            ),
        )

    @property
    def repo_id(self) -> int:
        return self.catalog.repo_id

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def strict_metadata(self) -> bool:
        return self.config.strict_metadata

    def own_paths(self) -> list[str]:
        """The local files and directories this repo lives in (its SQLite catalog file and a
        local object directory); nothing may be written over them."""
        paths = [p for p in (sqlite_file(self.config.catalog),) if p is not None]
        local = resolve_storage(self.config.catalog, self.storage)
        if "://" not in local:
            paths.append(local)
        return paths

    def key(self) -> tuple[Any, ...]:
        """Identifies this repo incarnation in this process (sessions are cached by it)."""
        return (*self.config.key(), self.catalog.catalog_id, self.repo_id)

    def read_chunk(self, ref: ChunkRef, start: int | None = None, end: int | None = None) -> bytes:
        """A chunk stored as an object or in a pack, verified; a packed chunk whose pack gc
        replaced is read where gc moved it (the catalog is asked only then); a virtual chunk
        read from its source, if the source is allowed and unchanged."""
        if ref.source is not None:
            return self.sources.read(ref, start, end)
        try:
            return self.objects.read_chunk(ref, start, end)
        except ObjectMissingError:
            moved = self._moved(ref)
            if moved is None:
                raise
        return self.read_chunk(moved, start, end)

    async def read_chunk_async(
        self, ref: ChunkRef, start: int | None = None, end: int | None = None
    ) -> bytes:
        """Async version of :meth:`read_chunk`."""
        if ref.source is not None:
            return await self.sources.read_async(ref, start, end)
        try:
            return await self.objects.read_chunk_async(ref, start, end)
        except ObjectMissingError:
            moved = await asyncio.to_thread(self._moved, ref)
            if moved is None:
                raise
        return await self.read_chunk_async(moved, start, end)

    def _moved(self, ref: ChunkRef) -> ChunkRef | None:
        if ref.pack is None:
            return None
        found = self.catalog.gc.moved_to(ref.pack, ref.offset)
        return None if found is None else dataclasses.replace(ref, pack=found[0], offset=found[1])


def resolve_storage(catalog_url: str, storage: str) -> str:
    """Where a repo's objects are: a relative path is relative to the directory of its SQLite
    catalog file, so an embedded lake keeps working when moved or copied as a folder."""
    if "://" in storage or os.path.isabs(storage):
        return storage
    file = sqlite_file(catalog_url)
    if file is None:
        return str(Path(storage).absolute())
    return str((Path(file).parent / storage).resolve())


_cores: MutableMapping[tuple[Any, ...], RepoCore] = process.registry("cores")
_lock = threading.Lock()


def _build(config: RepoConfig, catalog: RepoCatalog, found: RepoRecord) -> RepoCore:
    hasher = chunk_hasher(found.content_hash)
    objects = open_object_store(
        resolve_storage(config.catalog, found.storage),
        config.storage_options,
        verify=config.verify_reads,
        hasher=hasher,
    )
    reader = CatalogReader(catalog.nodes)
    return RepoCore(config, catalog, found.storage, objects, reader, hasher, found.virtual_identity)


def open_core(config: RepoConfig) -> RepoCore:
    """This process's core for ``config``, checked against the catalog (one query)."""
    catalog = catalog_for(config.catalog)
    found = catalog.get_repo(config.name)
    key = config.key()
    with _lock:
        core = _cores.get(key)
        if (
            core is not None
            and core.catalog.catalog_id == catalog.catalog_id
            and core.repo_id == found.id
            and core.storage == found.storage
            and core.hasher.name == found.content_hash
            and core.virtual_identity == found.virtual_identity
        ):
            return core
    core = _build(config, catalog.repo(found.id), found)
    with _lock:
        _cores[key] = core
    return core


def create_core(config: RepoConfig, storage: str, author: str, hasher: ChunkHasher) -> RepoCore:
    """Record a new repo in the catalog (after checking its storage works), with its first,
    empty commit, its content hash and the virtual identity of new repos, and open it."""
    objects = open_object_store(
        resolve_storage(config.catalog, storage),
        config.storage_options,
        verify=False,
        hasher=hasher,
    )
    objects.probe()
    objects.initialize()
    root = Root().encode()
    first = CommitRecord(
        new_commit_id(),
        None,
        None,
        content_hash(root),
        None,
        author,
        "Repository initialized",
        {},
        0.0,
        0,
    )
    catalog_for(config.catalog, create=True).create_repo(
        config.name, storage, first, root, hasher.name, DEFAULT_VIRTUAL_IDENTITY
    )
    return open_core(config)


def forget_cores() -> None:
    """Drop this process's cached cores (they are rebuilt on the next open)."""
    with _lock:
        _cores.clear()
