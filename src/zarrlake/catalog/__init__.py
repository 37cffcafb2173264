"""The SQL catalog: schema and migrations, one query object per concern bound to a repo, the
one commit writer; SQLite and PostgreSQL. Upper layers see model values only."""

from zarrlake.catalog.catalog import (
    Catalog,
    CatalogUpgrade,
    RepoCatalog,
    catalog_for,
    forget_catalog,
    upgrade_catalog,
)
from zarrlake.catalog.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Catalog",
    "CatalogUpgrade",
    "RepoCatalog",
    "catalog_for",
    "forget_catalog",
    "upgrade_catalog",
]
