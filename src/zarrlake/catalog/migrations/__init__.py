"""Schema migrations: one module per schema version, each upgrading from the version before.

A new catalog is created at the current version (:data:`zarrlake.catalog.schema.SCHEMA_VERSION`)
directly. An existing one is upgraded only by an explicit call (``zarrlake catalog upgrade``,
:func:`zarrlake.upgrade_catalog`); opening a catalog only reads its version, and refuses one
that is older or newer than this release.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import sqlalchemy as sa

from zarrlake.catalog.migrations import (
    v2_gc_marks,
    v3_commit_keys,
    v4_packs,
    v5_checksums,
    v6_virtual_sources,
    v7_rules,
    v8_webhooks,
    v9_content_hash,
    v10_staged_batches,
    v11_virtual_identity,
)

__all__ = ["MIGRATIONS", "run"]

_MODULES: tuple[ModuleType, ...] = (
    v2_gc_marks,
    v3_commit_keys,
    v4_packs,
    v5_checksums,
    v6_virtual_sources,
    v7_rules,
    v8_webhooks,
    v9_content_hash,
    v10_staged_batches,
    v11_virtual_identity,
)

# version -> (what it adds, the function upgrading a catalog from version - 1 to it)
MIGRATIONS: dict[int, tuple[str, Callable[[sa.Connection], None]]] = {
    m.VERSION: (m.ADDS, m.upgrade) for m in _MODULES
}


def run(conn: sa.Connection, start: int, target: int) -> list[int]:
    """Upgrade from version ``start`` to ``target`` inside the caller's transaction; returns
    the versions applied."""
    applied = []
    for v in range(start + 1, target + 1):
        MIGRATIONS[v][1](conn)
        applied.append(v)
    return applied
