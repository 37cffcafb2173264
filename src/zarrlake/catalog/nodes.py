"""Content-addressed catalog nodes: snapshot roots, manifest indexes and shards, metadata
documents and change sets, shared by every commit that did not change them."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import sqlalchemy as sa

import zarrlake.catalog.dialect as dia
from zarrlake.catalog.db import Scoped
from zarrlake.catalog.driver import DriverTx, Prepared
from zarrlake.catalog.rows import batches
from zarrlake.catalog.schema import blobs, staged
from zarrlake.errors import CatalogError

__all__ = ["NodeQueries", "copy_staged_shards", "put_nodes"]

Nodes = dict[bytes, tuple[str, bytes]]


def put_nodes(conn: DriverTx, repo_id: int, items: Nodes, now: float) -> None:
    """Store nodes (hash -> (kind, bytes)); one written again refreshes its ``created_at``,
    so garbage collection that marked it before does not delete it (docs/history.md)."""
    if items:
        conn.execute(
            _put_nodes(conn.dialect.name),
            [
                {"repo_id": repo_id, "hash": h, "kind": k, "data": d, "created_at": now}
                for h, (k, d) in items.items()
            ],
        )


@functools.cache
def _put_nodes(dialect: str) -> Prepared:
    return Prepared(dia.upsert(blobs, dialect, ["created_at"]))


def copy_staged_shards(
    conn: DriverTx, repo_id: int, session_id: str, hashes: Sequence[bytes], now: float
) -> None:
    """Store, as shard nodes, the batches session ``session_id`` staged under ``hashes`` (a
    batch's bytes are the shard's: :mod:`zarrlake.model.staged_batches`), copied inside the
    database, never through this process. One already stored is refreshed as
    :func:`put_nodes` refreshes it. A batch no longer staged under its hash (another process
    of the session staged over it meanwhile) fails the commit: it would miss a node."""
    want = sorted(set(hashes))
    found = 0
    for part in batches(want):
        mine = sa.and_(blobs.c.repo_id == repo_id, blobs.c.hash.in_(part))
        conn.execute(sa.update(blobs).where(mine).values(created_at=now))
        rows = sa.select(
            sa.literal(repo_id, sa.Integer),
            staged.c.hash,
            sa.literal("shard", blobs.c.kind.type),
            staged.c.inline,
            sa.literal(now, sa.Float),
        ).where(
            staged.c.session_id == session_id,
            staged.c.kind == "vrefs",
            staged.c.hash.in_(part),
        )  # two positions staged alike are one node: the second row is ignored
        conn.execute(
            dia.insert_ignore(blobs, conn.dialect.name).from_select(
                ["repo_id", "hash", "kind", "data", "created_at"], rows
            )
        )
        found += conn.execute(
            sa.select(sa.func.count()).select_from(blobs).where(mine)
        ).scalar_one()
    if found != len(want):
        raise CatalogError(
            f"{len(want) - found} of the reference batches session {session_id} staged changed "
            "while it committed (another process of the session staged over them); nothing "
            "was committed: commit again once every process is done staging"
        )


class NodeQueries(Scoped):
    """A repo's catalog nodes, by content hash."""

    def put(self, items: Nodes) -> None:
        with self.db.tx(write=True) as conn:
            put_nodes(conn, self.repo_id, items, self.db.now(conn))

    def get(self, h: bytes) -> bytes:
        with self.db.read() as conn:
            data = conn.execute(_GET, {"p_repo": self.repo_id, "p_hash": h}).scalar()
        if data is None:
            raise CatalogError(f"catalog node {h.hex()} is missing; run repo.fsck()")
        return bytes(data)

    def get_many(self, hashes: Sequence[bytes]) -> Nodes:
        """Several nodes at once: hash -> (kind, bytes); missing ones are left out."""
        out: Nodes = {}
        for batch in batches(list(hashes)):
            with self.db.read() as conn:
                for r in conn.execute(_GET_MANY, {"p_repo": self.repo_id, "p_hashes": batch}):
                    out[bytes(r.hash)] = (r.kind, bytes(r.data))
        return out


_GET = Prepared(
    sa.select(blobs.c.data).where(
        blobs.c.repo_id == sa.bindparam("p_repo"), blobs.c.hash == sa.bindparam("p_hash")
    )
)
# Built once, with the hashes as one expanding parameter: building the IN list element by
# element cost more than the query itself for a diff loading a hundred shards.
_GET_MANY = sa.select(blobs.c.hash, blobs.c.kind, blobs.c.data).where(
    blobs.c.repo_id == sa.bindparam("p_repo"),
    blobs.c.hash.in_(sa.bindparam("p_hashes", expanding=True)),
)
