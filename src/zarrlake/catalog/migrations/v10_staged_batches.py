"""Version 10: virtual references staged a shard at a time (``zl_staged`` rows of kinds
``vrefs`` and ``vshape``, :mod:`zarrlake.catalog.batches`).

No table changes: the version says that sessions may hold such rows, which a release before
it would take for chunks. An open session's rows of before stay valid as they are."""

from __future__ import annotations

import sqlalchemy as sa

VERSION = 10
ADDS = "virtual references staged a shard at a time (kinds vrefs and vshape of zl_staged)"


def upgrade(conn: sa.Connection) -> None:
    """Nothing to change in the tables: the version number is the change."""
