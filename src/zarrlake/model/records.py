"""What the catalog hands upward: commits, sessions and staged changes as values.

The catalog keeps its rows to itself and converts them into these; the chunk coordinates of a
staged chunk are a tuple here, whatever the catalog's encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from zarrlake.model.lifecycle import session_status
from zarrlake.model.manifest import ChunkRef
from zarrlake.types import ChunkCoords, CommitInfo, SessionInfo, from_epoch

__all__ = [
    "CommitRecord",
    "RefUpdate",
    "RepoRecord",
    "SessionRecord",
    "StagedEntry",
    "StagedKind",
]

StagedKind = Literal["meta", "drop", "chunk", "raw", "vrefs", "vshape"]


@dataclass(frozen=True, slots=True)
class RepoRecord:
    """A repo as the catalog records it: its id, where its objects are (as recorded), the
    name of the content hash naming them (:mod:`zarrlake.model.hashing`) and of the identity
    naming its virtual chunks (:mod:`zarrlake.model.virtual`)."""

    id: int
    storage: str
    content_hash: str
    virtual_identity: str


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One commit: its parents, snapshot root, change set, and who made it when."""

    id: str
    parent_id: str | None
    merge_parent_id: str | None
    root_hash: bytes
    changes_hash: bytes | None
    author: str
    message: str
    meta: dict[str, Any]
    created_at: float  # the catalog's clock, epoch seconds
    generation: int  # 1 + the longest parent chain below it

    @property
    def parents(self) -> tuple[str, ...]:
        return tuple(p for p in (self.parent_id, self.merge_parent_id) if p)

    def info(self) -> CommitInfo:
        """The public description (``repo.log()`` rows)."""
        return CommitInfo(
            self.id, self.parents, self.author, self.message, self.meta, from_epoch(self.created_at)
        )


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session as the catalog records it (``status``: ``open``, ``committed`` or
    ``abandoned``; expiry is a matter of the clock, see :meth:`info`)."""

    id: str
    branch: str
    base_commit: str
    author: str
    isolation: str
    status: str
    created_at: float
    expires_at: float
    commit_id: str | None

    def info(self, now: float) -> SessionInfo:
        """The public description of this session at catalog time ``now``."""
        return SessionInfo(
            self.id,
            self.branch,
            self.base_commit,
            self.author,
            self.isolation,
            session_status(self.status, self.expires_at, now),
            from_epoch(self.created_at),
            from_epoch(self.expires_at),
            self.commit_id,
        )


@dataclass(frozen=True, slots=True)
class StagedEntry:
    """A session's staged change of one key.

    ``meta``: a node's metadata document (``ref.hash`` names it); ``drop``: the node is
    removed; ``chunk``: the chunk at ``coords`` of the array at ``path``; ``raw``: the store
    key ``key``, not a Zarr node's (``path`` is ``""``); ``vrefs``: virtual references staged
    a shard at a time (:mod:`zarrlake.model.batches`), the shard at position ``coords`` of
    shard shape ``key`` (its text), held inline in ``ref``; ``vshape``: the shard shape
    (``key``) of every batch of the array at ``path``. ``ref`` is ``None`` for a deleted
    chunk or key (a tombstone) and for drops.
    """

    path: str
    kind: StagedKind
    coords: ChunkCoords = ()
    key: str = ""
    ref: ChunkRef | None = None

    @property
    def slot(self) -> tuple[str, str, ChunkCoords, str]:
        """What a later write of the same key replaces."""
        return (self.path, self.kind, self.coords, self.key)


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """A branch or tag to create (``expected`` ``None``) or a branch to move from
    ``expected`` to ``new`` by compare-and-swap."""

    name: str
    kind: str
    new: str
    expected: str | None = None
