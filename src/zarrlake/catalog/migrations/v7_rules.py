"""Version 7: checks, protected branches and pull requests (``zl_checks``,
``zl_branch_rules``, ``zl_pulls``, ``zl_pull_events``)."""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.schema import branch_rules, checks, pull_events, pulls

VERSION = 7
ADDS = "checks on commits and merges, protected branches, pull requests"


def upgrade(conn: sa.Connection) -> None:
    for table in (checks, branch_rules, pulls, pull_events):
        table.create(conn)
