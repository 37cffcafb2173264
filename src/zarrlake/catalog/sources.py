"""Where a repo's virtual chunk references may point: allowed URL prefixes and, for each, the
options to read it with that are not secrets (credentials never reach the catalog)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.schema import virtual_sources

__all__ = ["SourceQueries"]


class SourceQueries(Scoped):
    """A repo's allowed virtual sources."""

    def all(self) -> dict[str, dict[str, Any]]:
        """prefix -> options, for every allowed prefix."""
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(virtual_sources.c.prefix, virtual_sources.c.options)
                .where(virtual_sources.c.repo_id == self.repo_id)
                .order_by(virtual_sources.c.prefix)
            )
            return {str(r.prefix): dict(json.loads(r.options)) for r in rows}

    def allow(self, prefix: str, options: dict[str, Any]) -> None:
        """Allow ``prefix`` (already normalized), with ``options`` (replacing earlier ones)."""
        with self.db.tx(write=True) as conn:
            conn.execute(
                dia.upsert(virtual_sources, conn.dialect.name, ["options"]),
                [
                    {
                        "repo_id": self.repo_id,
                        "prefix": prefix,
                        "options": json.dumps(options, sort_keys=True),
                        "created_at": self.db.now(conn),
                    }
                ],
            )
