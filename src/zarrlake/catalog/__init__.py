"""The SQL catalog: schema, queries by concern, compare-and-swap commits; SQLite and PostgreSQL."""

from zarrlake.catalog.catalog import Catalog, catalog_for, forget_catalog
from zarrlake.catalog.rows import CommitRow, RefLogRow, SessionRow, StagedRow
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
