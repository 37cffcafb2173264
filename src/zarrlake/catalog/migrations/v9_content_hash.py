"""Version 9: the function naming each repo's chunk objects (``zl_repos.content_hash``).

Every repo made before is recorded as SHA-256, the only function there was: its objects keep
their names, so they stay readable, writable and deduplicated. New repos default to BLAKE3."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.migrations.columns import add_column
from zarrlake.catalog.schema import repos
from zarrlake.model.hashing import SHA256

VERSION = 9
ADDS = "the content hash of each repo's chunk objects (SHA-256 for existing repos)"


def upgrade(conn: sa.Connection) -> None:
    add_column(conn, repos.c.content_hash, default=SHA256)
