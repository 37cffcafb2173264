"""Version 11: the function naming each repo's virtual chunks (``zl_repos.virtual_identity``).

Every repo made before is recorded as SHA-256, the only function there was: a reference it
stages again is named as its committed twin, so diffs and merges still see them as the same
chunk. New repos name virtual chunks by their span (:data:`~zarrlake.model.virtual.SPAN_IDENTITY`),
computed for a whole batch of references at once."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.migrations.columns import add_column
from zarrlake.catalog.schema import repos
from zarrlake.model.virtual import SHA256_IDENTITY

VERSION = 11
ADDS = "the identity of each repo's virtual chunks (SHA-256 for existing repos)"


def upgrade(conn: sa.Connection) -> None:
    add_column(conn, repos.c.virtual_identity, default=SHA256_IDENTITY)
