"""Version 6: virtual chunk references (``zl_staged.source``) and where they may point
(``zl_virtual_sources``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.migrations.columns import add_column
from zarrlake.catalog.schema import staged, virtual_sources

VERSION = 6
ADDS = "virtual chunk references and the prefixes they may point under"


def upgrade(conn: sa.Connection) -> None:
    add_column(conn, staged.c.source)
    virtual_sources.create(conn)
