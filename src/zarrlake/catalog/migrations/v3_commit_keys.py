"""Version 3: idempotency keys of commits (``zl_commit_keys``) and the catalog's identity."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from zarrlake.catalog.schema import commit_keys, info

VERSION = 3
ADDS = "idempotency keys of commits, the catalog's identity"


def upgrade(conn: sa.Connection) -> None:
    commit_keys.create(conn, checkfirst=True)
    # the catalog's identity, so that a process never writes into a database that replaced
    # the one it opened
    if conn.execute(sa.select(info.c.key).where(info.c.key == "catalog_id")).first() is None:
        conn.execute(sa.insert(info).values(key="catalog_id", value=uuid.uuid4().hex))
