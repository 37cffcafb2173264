"""The reports of gc, expire, fsck and export."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from zarrlake.types import ChunkCoords

__all__ = ["ExpireReport", "ExportReport", "FsckIssue", "FsckReport", "GCReport"]


@dataclass(frozen=True, slots=True)
class GCReport:
    """What a garbage collection freed, and what waits for the grace period."""

    objects_deleted: int = 0
    object_bytes_freed: int = 0
    nodes_deleted: int = 0
    node_bytes_freed: int = 0
    objects_pending: int = 0
    nodes_pending: int = 0
    dry_run: bool = False
    packs_repacked: int = 0  # mostly dead packs whose live chunks were copied to new packs

    @property
    def deleted(self) -> int:
        """Chunk objects and catalog nodes deleted (or, for a dry run, deletable now)."""
        return self.objects_deleted + self.nodes_deleted

    @property
    def bytes_freed(self) -> int:
        return self.object_bytes_freed + self.node_bytes_freed

    def __repr__(self) -> str:
        verb = "would free" if self.dry_run else "freed"
        return (
            f"<GCReport {verb} {self.objects_deleted} objects ({self.object_bytes_freed} B) and "
            f"{self.nodes_deleted} catalog nodes ({self.node_bytes_freed} B); pending: "
            f"{self.objects_pending} objects, {self.nodes_pending} nodes; "
            f"{'repackable' if self.dry_run else 'repacked'}: {self.packs_repacked} packs>"
        )

    def _repr_html_(self) -> str:
        from zarrlake.display import report_html

        return report_html(self)


@dataclass(frozen=True, slots=True)
class ExpireReport:
    """The commits an ``expire`` dropped (or, for a dry run, would drop)."""

    cutoff: datetime
    expired: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def commits_expired(self) -> int:
        return len(self.expired)

    def __repr__(self) -> str:
        verb = "would expire" if self.dry_run else "expired"
        return f"<ExpireReport {verb} {len(self.expired)} commits older than {self.cutoff.isoformat()}>"

    def _repr_html_(self) -> str:
        from zarrlake.display import report_html

        return report_html(self)


@dataclass(frozen=True, slots=True)
class FsckIssue:
    """One problem ``fsck`` found.

    ``kind`` is ``missing_object`` (no readable object under its name: deleted, or something
    else in its place), ``corrupt_object``, ``unreadable_object`` (found by ``verify``: it is
    there but cannot be read, e.g. its permissions or an I/O error) or ``missing_node`` (a
    catalog node);
    ``commit``, ``path`` and ``chunk`` say where it is referenced (``commit`` is ``None`` for
    an open session's staged write). For the source of virtual chunks (``source``: its URL,
    ``hash`` empty), ``kind`` is ``missing_source`` (gone or unreadable), ``changed_source``
    (not the version the references recorded) or ``refused_source`` (under no allowed prefix).
    """

    kind: str
    hash: str
    commit: str | None = None
    path: str | None = None
    chunk: ChunkCoords | None = None
    source: str | None = None
    detail: str = ""

    def __str__(self) -> str:
        if self.source is not None:
            return f"{self.kind} {self.source}" + (f": {self.detail}" if self.detail else "")
        where = ""
        if self.path is not None:
            where = f" at /{self.path}" + (f" chunk {self.chunk}" if self.chunk is not None else "")
        if self.commit is not None:
            where += f" (commit {self.commit[:10]})"
        return f"{self.kind} {self.hash[:16]}{where}"


@dataclass(frozen=True, slots=True)
class FsckReport:
    """The result of ``repo.fsck()``: ``ok`` unless ``issues`` lists something."""

    commits_checked: int
    objects_checked: int
    nodes_checked: int
    verified: bool
    issues: tuple[FsckIssue, ...] = ()
    sources_checked: int = 0  # sources of virtual chunks

    @property
    def ok(self) -> bool:
        return not self.issues

    @property
    def missing(self) -> tuple[FsckIssue, ...]:
        return tuple(i for i in self.issues if i.kind == "missing_object")

    @property
    def corrupt(self) -> tuple[FsckIssue, ...]:
        return tuple(i for i in self.issues if i.kind == "corrupt_object")

    @property
    def unreadable(self) -> tuple[FsckIssue, ...]:
        return tuple(i for i in self.issues if i.kind == "unreadable_object")

    def __repr__(self) -> str:
        head = (
            f"<FsckReport {'ok' if self.ok else f'{len(self.issues)} issue(s)'}: "
            f"{self.commits_checked} commits, {self.objects_checked} objects"
            f"{' verified' if self.verified else ''}, {self.nodes_checked} catalog nodes"
            f"{f', {self.sources_checked} virtual sources' if self.sources_checked else ''}>"
        )
        return "\n".join([head, *(f"  {i}" for i in self.issues[:50])])

    def _repr_html_(self) -> str:
        from zarrlake.display import report_html

        return report_html(self)


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What ``repo.export`` wrote."""

    commit: str
    target: str
    nodes: int
    chunks: int
    bytes: int

    def __repr__(self) -> str:
        return (
            f"<ExportReport commit {self.commit[:10]} -> {self.target}: {self.nodes} nodes, "
            f"{self.chunks} chunks, {self.bytes} B>"
        )

    # -- reachability ------------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        from zarrlake.display import report_html

        return report_html(self)
