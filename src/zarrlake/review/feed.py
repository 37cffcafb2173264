"""The change feed: the commits that landed on a branch after a point, each with the arrays
it changed and how many chunks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import zarrlake.history as history
from zarrlake.core import RepoCore
from zarrlake.errors import InvalidInputError
from zarrlake.model.records import CommitRecord
from zarrlake.types import CommitInfo, to_timestamp, validate_name

__all__ = ["ChangeEvent", "changes"]

_PAGE = 200


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One commit of the feed: the commit, its branch, and per array (or group) path what
    it did (``chunks``: chunks written or removed; ``created``, ``deleted``, ``metadata``)."""

    branch: str
    commit: CommitInfo
    nodes: dict[str, dict[str, Any]]

    @property
    def arrays(self) -> dict[str, int]:
        """Array path -> chunks it changed (arrays created, changed or deleted)."""
        return {p: int(n["chunks"]) for p, n in self.nodes.items() if n["type"] == "array"}

    @property
    def chunks(self) -> int:
        """Chunks changed in all arrays."""
        return sum(int(n["chunks"]) for n in self.nodes.values())

    def to_json(self) -> dict[str, Any]:
        c = self.commit
        return {
            "branch": self.branch,
            "commit": c.id,
            "parents": list(c.parents),
            "author": c.author,
            "message": c.message,
            "created_at": c.created_at.isoformat(),
            "checks": c.metadata.get("checks", {}),
            "pull_request": c.metadata.get("pull_request"),
            "arrays": self.arrays,
            "nodes": self.nodes,
        }


def _event(core: RepoCore, branch: str, row: CommitRecord) -> ChangeEvent:
    nodes: dict[str, dict[str, Any]] = {}
    if row.changes_hash is not None:
        for path, c in sorted(core.reader.changes(row.changes_hash).nodes.items()):
            nodes[path] = {
                "type": c.node_type or "unknown",
                "chunks": len(c.chunks),
                "created": c.created,
                "deleted": c.deleted,
                "metadata": c.meta_changed,
            }
    return ChangeEvent(branch, row.info(), nodes)


def changes(core: RepoCore, since: str | datetime | None, branch: str) -> Iterator[ChangeEvent]:
    """Commits on ``branch`` (first parents) after ``since`` (a commit or ref: the commits
    after it; a time: those made after it; ``None``: every commit), oldest first."""
    validate_name(branch, "branch name")
    head = history.branch_head(core, branch)
    after_id: str | None = None
    after_ts: float | None = None
    if isinstance(since, datetime):
        # times are shown rounded to the microsecond (datetime's resolution): a time copied
        # from a commit means "after that commit", as in the ref log's lookups
        after_ts = to_timestamp(since, "since") + 1e-6
    elif isinstance(since, str):
        after_id = history.resolve_ref(core, since)
        after_ts = core.catalog.commits.get(after_id).created_at
    elif since is not None:
        raise InvalidInputError(f"since must be a commit, a ref or a datetime, got {since!r}")
    return _walk(core, branch, head.id, after_id, after_ts)


def _walk(
    core: RepoCore, branch: str, head: str, after_id: str | None, after_ts: float | None
) -> Iterator[ChangeEvent]:
    found: list[CommitRecord] = []
    limit = _PAGE
    while True:
        rows = core.catalog.commits.ancestry(head, limit)
        found = []
        stop = False
        for r in rows:
            # a commit id ends the walk there; a time ends it at the first older commit (the
            # catalog's clock only moves forward along a branch's first parents)
            if r.id == after_id or (after_ts is not None and r.created_at <= after_ts):
                stop = True
                break
            found.append(r)
        if stop or len(rows) < limit:
            break
        limit *= 4
    for r in reversed(found):
        yield _event(core, branch, r)
