"""Version 8: webhooks told of a repo's commits, merges and pull request events
(``zl_webhooks``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.schema import webhooks

VERSION = 8
ADDS = "webhooks"


def upgrade(conn: sa.Connection) -> None:
    webhooks.create(conn)
