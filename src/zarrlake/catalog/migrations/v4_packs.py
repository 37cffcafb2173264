"""Version 4: packed chunks (``zl_staged.pack``, ``pack_offset``; ``zl_moved``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.migrations.columns import add_column
from zarrlake.catalog.schema import moved, staged, tune_storage

VERSION = 4
ADDS = "packed chunks and the chunks gc moved between packs"


def upgrade(conn: sa.Connection) -> None:
    for name in ("pack", "pack_offset"):
        add_column(conn, staged.c[name])
    moved.create(conn, checkfirst=True)
    tune_storage(conn)
