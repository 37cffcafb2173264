"""Version 2: garbage collection's two-phase bookkeeping (``zl_gc_marks``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.schema import gc_marks

VERSION = 2
ADDS = "garbage collection marks (two-phase gc)"


def upgrade(conn: sa.Connection) -> None:
    gc_marks.create(conn, checkfirst=True)
