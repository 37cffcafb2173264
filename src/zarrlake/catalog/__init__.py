"""The SQL catalog: schema, queries, compare-and-swap commits; SQLite and PostgreSQL."""

from zarrlake.catalog.catalog import (
    Catalog,
    CommitRow,
    RefLogRow,
    SessionRow,
    StagedRow,
    catalog_for,
    forget_catalog,
)
from zarrlake.catalog.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Catalog",
    "CommitRow",
    "RefLogRow",
    "SessionRow",
    "StagedRow",
    "catalog_for",
    "forget_catalog",
]
