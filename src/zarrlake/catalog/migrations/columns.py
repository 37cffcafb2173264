"""Adding a column to an existing table, as the schema defines it (its type compiled for the
catalog's dialect), for migrations."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["add_column"]


def add_column(conn: sa.Connection, column: sa.Column[Any], default: str | None = None) -> None:
    """``ALTER TABLE ... ADD COLUMN`` of ``column`` (a column of a table of
    :mod:`zarrlake.catalog.schema`); with ``default``, ``NOT NULL`` and that text value in
    every existing row."""
    kind = column.type.compile(dialect=conn.dialect)
    extra = "" if default is None else f" NOT NULL DEFAULT '{default}'"
    conn.execute(sa.text(f"ALTER TABLE {column.table.name} ADD COLUMN {column.name} {kind}{extra}"))
