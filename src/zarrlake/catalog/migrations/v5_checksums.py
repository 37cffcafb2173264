"""Version 5: read checksums of staged chunks (``zl_staged.crc``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.migrations.columns import add_column
from zarrlake.catalog.schema import staged

VERSION = 5
ADDS = "CRC32C read checksums of staged chunks"


def upgrade(conn: sa.Connection) -> None:
    add_column(conn, staged.c.crc)
