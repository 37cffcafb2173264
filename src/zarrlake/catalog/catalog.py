"""The catalog: one class assembled from the query modules by concern, and the per-process
registry of open catalogs.

One code path for SQLite and PostgreSQL (quirks in :mod:`zarrlake.catalog.dialect`). Every
public method is one transaction. Branches move only by compare-and-swap::

    UPDATE zl_refs SET commit_id = :new WHERE repo_id = :r AND name = :b AND commit_id = :old
"""

from __future__ import annotations

import os
import threading

from zarrlake.catalog.commits import CommitQueries

__all__ = ["Catalog", "catalog_for", "forget_catalog"]


class Catalog(CommitQueries):
    """A connection to one catalog database: refs, commits, sessions, staged changes, gc."""


_catalogs: dict[tuple[int, str], Catalog] = {}
_catalogs_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # Pooled connections belong to the parent; the child must open its own (SQLAlchemy's
    # documented recipe). Catalogs are keyed by pid, so the child builds new ones anyway.
    for cat in list(_catalogs.values()):
        cat.engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def catalog_for(url: str, *, create: bool = False) -> Catalog:
    """This process's :class:`Catalog` for a URL (one engine per process and URL).

    A cached catalog whose database was removed or replaced since (a SQLite file deleted or
    recreated, a PostgreSQL database dropped and created again) is closed and opened afresh.
    Only ``create=True`` makes the catalog's tables in a database that has none.
    """
    key = (os.getpid(), url)
    with _catalogs_lock:
        cat = _catalogs.get(key)
        if cat is not None and cat.is_stale():
            del _catalogs[key]
            cat.engine.dispose()
            cat = None
        if cat is None:
            cat = _catalogs[key] = Catalog(url, create=create)
        return cat


def forget_catalog(url: str) -> None:
    """Close and drop this process's engine for ``url``."""
    with _catalogs_lock:
        cat = _catalogs.pop((os.getpid(), url), None)
    if cat is not None:
        cat.engine.dispose()
