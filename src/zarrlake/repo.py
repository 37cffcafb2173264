"""A repo: one versioned Zarr hierarchy, with its branches, tags, history and sessions."""

from __future__ import annotations

import getpass
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from zarrlake import history, maintenance
from zarrlake._reader import CatalogReader
from zarrlake.catalog import Catalog, catalog_for, forget_catalog
from zarrlake.errors import (
    InvalidInputError,
    NotFoundError,
    RefMovedError,
)
from zarrlake.maintenance import ExpireReport, ExportReport, FsckReport, GCReport
from zarrlake.model import Root, content_hash
from zarrlake.model.diff import Diff
from zarrlake.model.merge import MergeStrategy
from zarrlake.objects import ObjectStore, open_object_store
from zarrlake.session import DEFAULT_EXPIRY, MAX_EXPIRY, Session
from zarrlake.types import (
    CommitInfo,
    Isolation,
    RefLogEntry,
    SessionInfo,
    from_epoch,
    new_commit_id,
    new_session_id,
    validate_name,
)

__all__ = ["Repo", "RepoConfig"]

CATALOG_FILE = "catalog.db"


def default_author() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """Everything needed to reopen a repo in another process (no open handles)."""

    catalog: str
    name: str = "default"
    storage_options: dict[str, Any] = field(default_factory=dict)
    verify_reads: bool = True
    strict_metadata: bool = True

    def key(self) -> tuple[Any, ...]:
        return (
            self.catalog,
            self.name,
            repr(sorted(self.storage_options.items())),
            self.verify_reads,
            self.strict_metadata,
        )


_repos: dict[tuple[Any, ...], Repo] = {}
_repos_lock = threading.Lock()


def forget_location(location: str | os.PathLike[str]) -> None:
    """Drop this process's cached repos and catalog engine for an embedded-default repo, so
    that a repo created again at the same place after its directory was removed starts afresh."""
    _, url = _local_catalog(location)
    with _repos_lock:
        for key in [k for k in _repos if k[1] == url]:
            del _repos[key]
    forget_catalog(url)


def _local_catalog(location: str | os.PathLike[str]) -> tuple[Path, str]:
    path = Path(location).expanduser().absolute()
    return path, f"sqlite:///{path / CATALOG_FILE}"


class Repo:
    """One versioned Zarr hierarchy in a catalog.

    Use :meth:`create` or :meth:`open`::

        repo = Repo.create("my-lake")                      # SQLite + local directory
        repo = Repo.open(catalog="postgresql+psycopg://...", name="climate",
                         storage_options={"anon": False})
    """

    def __init__(self, config: RepoConfig) -> None:
        self.config = config
        self.name = config.name
        self._catalog: Catalog = catalog_for(config.catalog)
        self._id, self.storage = self._catalog.get_repo(config.name)
        self._strict = config.strict_metadata
        self._objects: ObjectStore = open_object_store(
            self.storage, config.storage_options, verify=config.verify_reads
        )
        self._reader = CatalogReader(self._catalog, self._id)

    # -- opening -------------------------------------------------------------------------------

    @staticmethod
    def _config(
        location: str | os.PathLike[str] | None,
        catalog: str | None,
        name: str,
        storage_options: dict[str, Any] | None,
        verify_reads: bool,
        strict_metadata: bool,
    ) -> tuple[RepoConfig, Path | None]:
        validate_name(name, "repo name")
        if location is not None:
            if catalog is not None:
                raise InvalidInputError(
                    "give either a location (embedded default) or catalog=, not both"
                )
            path, catalog = _local_catalog(location)
        elif catalog is None:
            raise InvalidInputError(
                "give a location (a local directory) or catalog= (a SQLAlchemy URL) and storage="
            )
        else:
            path = None
        return RepoConfig(
            catalog, name, dict(storage_options or {}), verify_reads, strict_metadata
        ), path

    @classmethod
    def create(
        cls,
        location: str | os.PathLike[str] | None = None,
        *,
        catalog: str | None = None,
        storage: str | None = None,
        name: str = "default",
        storage_options: dict[str, Any] | None = None,
        author: str | None = None,
        verify_reads: bool = True,
        strict_metadata: bool = True,
    ) -> Repo:
        """Create a repo.

        Parameters
        ----------
        location
            A local directory for the embedded default: the catalog is ``catalog.db`` (SQLite)
            and chunks go under ``chunks/`` inside it.
        catalog, storage
            Instead of ``location``: a SQLAlchemy URL (``sqlite:///...``,
            ``postgresql+psycopg://...``) and an object storage URL (a local path,
            ``s3://bucket/prefix``, ``memory://...``). One catalog may hold many repos.
        name
            The repo's name in its catalog.
        storage_options
            Passed to fsspec (credentials, endpoint); never stored in the catalog.
        verify_reads
            Check every chunk read against its SHA-256 (:class:`ChunkCorruptionError`).
        strict_metadata
            Refuse ``zarr.json`` documents that are not Zarr v3 metadata.
        """
        config, path = cls._config(
            location, catalog, name, storage_options, verify_reads, strict_metadata
        )
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
            storage_url = str(path)
        elif storage is None:
            raise InvalidInputError(
                "storage= is required with catalog= (e.g. 's3://bucket/prefix')"
            )
        else:
            storage_url = storage
            if "://" not in storage_url:
                storage_url = str(Path(storage_url).expanduser().absolute())
        # Fail on unusable storage before the catalog records the repo.
        open_object_store(storage_url, config.storage_options, verify=verify_reads)
        cat = catalog_for(config.catalog)
        data = Root().encode()
        cat.create_repo(
            name, storage_url, content_hash(data), data, new_commit_id(), author or default_author()
        )
        return cls._cached(config)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | None = None,
        *,
        catalog: str | None = None,
        name: str = "default",
        storage_options: dict[str, Any] | None = None,
        verify_reads: bool = True,
        strict_metadata: bool = True,
    ) -> Repo:
        """Open an existing repo (see :meth:`create` for the parameters)."""
        config, path = cls._config(
            location, catalog, name, storage_options, verify_reads, strict_metadata
        )
        if path is not None and not (path / CATALOG_FILE).exists():
            raise NotFoundError(
                f"no zarrlake repo at {path} (create one with Repo.create({str(path)!r}))"
            )
        return cls._cached(config)

    @classmethod
    def open_or_create(cls, location: str | os.PathLike[str] | None = None, **kwargs: Any) -> Repo:
        """Open the repo if it exists, else create it."""
        open_kwargs = {k: v for k, v in kwargs.items() if k not in ("storage", "author")}
        try:
            return cls.open(location, **open_kwargs)
        except NotFoundError:
            return cls.create(location, **kwargs)

    @classmethod
    def _cached(cls, config: RepoConfig) -> Repo:
        key = (os.getpid(), *config.key())
        with _repos_lock:
            repo = _repos.get(key)
            if repo is None:
                repo = _repos[key] = cls(config)
            return repo

    def __reduce__(self) -> tuple[Any, ...]:
        return (Repo._cached, (self.config,))

    def __repr__(self) -> str:
        return f"<zarrlake.Repo {self.name!r} catalog={self._catalog._safe_url()} storage={self.storage}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repo) and other.config == self.config

    def __hash__(self) -> int:
        return hash(self.config.key())

    # -- refs ----------------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """The commit id a ref expression names.

        A branch, tag, commit id or unique prefix, optionally followed by ``@{N}`` (the Nth
        earlier position of the ref, from the ref log), ``@{2026-11-01T12:00}`` (its position
        at that time), ``~N`` (Nth first-parent ancestor) and ``^N`` (Nth parent). Every
        method that takes a ref accepts these. See ``docs/history.md``.
        """
        return history.resolve_ref(self, ref)

    def branches(self) -> dict[str, str]:
        """Branch name -> head commit id."""
        return self._catalog.list_refs(self._id, "branch")

    def tags(self) -> dict[str, str]:
        """Tag name -> commit id."""
        return self._catalog.list_refs(self._id, "tag")

    def create_branch(self, name: str, from_ref: str = "main", *, author: str | None = None) -> str:
        """Create a branch at ``from_ref`` (branch, tag or commit); returns its commit id."""
        validate_name(name, "branch name")
        commit = self.resolve(from_ref)
        self._catalog.create_ref(self._id, name, "branch", commit, author or default_author())
        return commit

    def delete_branch(self, name: str, *, author: str | None = None) -> str:
        """Delete a branch (its commits stay reachable from other refs); returns its last head."""
        validate_name(name, "branch name")
        return self._catalog.delete_ref(self._id, name, "branch", author or default_author())

    def reset_branch(
        self,
        name: str,
        to: str,
        *,
        expected: str | None = None,
        author: str | None = None,
        message: str = "",
    ) -> str:
        """Point a branch at another commit, by compare-and-swap; recorded in the ref log.

        ``expected`` is the commit the caller believes the branch is at (default: its current
        head, read now). Raises :class:`RefMovedError` if the branch is elsewhere.
        """
        validate_name(name, "branch name")
        target = self.resolve(to)
        current = self._catalog.get_ref(self._id, name)
        if current is None or current[0] != "branch":
            raise NotFoundError(f"no branch {name!r}")
        old = self.resolve(expected) if expected is not None else current[1]
        if not self._catalog.move_branch(
            self._id, name, old, target, author or default_author(), "reset", message
        ):
            raise RefMovedError(
                f"branch {name!r} is not at {old[:10]} any more (someone moved it); "
                "read its head again and retry"
            )
        return target

    def create_tag(self, name: str, ref: str = "main", *, author: str | None = None) -> str:
        """Create an immutable tag at ``ref``; returns its commit id."""
        validate_name(name, "tag name")
        commit = self.resolve(ref)
        self._catalog.create_ref(self._id, name, "tag", commit, author or default_author())
        return commit

    def delete_tag(self, name: str, *, author: str | None = None) -> str:
        """Delete a tag (recorded in the ref log); returns the commit it pointed to."""
        validate_name(name, "tag name")
        return self._catalog.delete_ref(self._id, name, "tag", author or default_author())

    def reflog(self, name: str, limit: int | None = None) -> list[RefLogEntry]:
        """Every move of a branch or tag, newest first."""
        validate_name(name, "ref name")
        return [
            RefLogEntry(
                r.name, r.action, r.old_commit, r.new_commit, r.author, from_epoch(r.at), r.message
            )
            for r in self._catalog.reflog(self._id, name, limit)
        ]

    # -- history -------------------------------------------------------------------------------

    def commit_info(self, ref: str) -> CommitInfo:
        row = self._catalog.get_commit(self._id, self.resolve(ref))
        return _info(row)

    def log(self, ref: str = "main", limit: int | None = None) -> list[CommitInfo]:
        """Commits reachable from ``ref`` by first parents, newest first."""
        if limit is not None and limit < 0:
            raise InvalidInputError("limit must be >= 0")
        return [_info(r) for r in self._catalog.ancestry(self._id, self.resolve(ref), limit)]

    def diff(self, a: str, b: str) -> Diff:
        """What changed from ref ``a`` to ref ``b``: nodes added, removed and modified,
        metadata field by field, and per array the chunk coordinates added, changed and
        removed. Unchanged manifest shards are never loaded."""
        return history.diff(self, a, b)

    def merge(
        self,
        source: str,
        into: str = "main",
        *,
        strategy: MergeStrategy = "fail",
        message: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        fast_forward: bool = True,
        timeout: float = 120.0,
    ) -> str:
        """Merge ref ``source`` into branch ``into``; returns the branch's new head.

        A fast-forward when ``into`` is an ancestor of ``source`` (unless
        ``fast_forward=False``); nothing when ``source`` is already merged; otherwise a
        three-way merge at chunk level against the common ancestor, recorded as a commit with
        two parents. Conflicts (the same rules as commits) raise :class:`ConflictError`, or
        are resolved by ``strategy="ours"`` (``into`` keeps its version) or ``"theirs"``
        (``source``'s version wins).
        """
        return history.merge(
            self,
            source,
            into,
            strategy=strategy,
            message=message,
            author=author or default_author(),
            metadata=metadata,
            fast_forward=fast_forward,
            timeout=timeout,
        )

    def revert(
        self,
        commit: str,
        *,
        branch: str = "main",
        message: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        timeout: float = 120.0,
    ) -> str:
        """Commit on ``branch`` the inverse of one commit's changes (against its first
        parent); returns the new commit. Refused with :class:`ConflictError` when later
        commits changed the same data."""
        return history.revert(
            self,
            commit,
            branch,
            message=message,
            author=author or default_author(),
            metadata=metadata,
            timeout=timeout,
        )

    # -- sessions ------------------------------------------------------------------------------

    def writable_session(
        self,
        branch: str = "main",
        *,
        expires_in: timedelta = DEFAULT_EXPIRY,
        author: str | None = None,
        isolation: Isolation = "snapshot",
    ) -> Session:
        """Start a unit of work on ``branch``.

        ``expires_in`` (default 24 h, at most 7 days) bounds how long it may stage writes;
        ``isolation="serializable"`` also refuses a commit if anything the session read was
        overwritten by a commit it did not see.
        """
        validate_name(branch, "branch name")
        if not isinstance(expires_in, timedelta) or expires_in.total_seconds() <= 0:
            raise InvalidInputError("expires_in must be a positive timedelta")
        if expires_in > MAX_EXPIRY:
            raise InvalidInputError(
                f"expires_in may be at most {MAX_EXPIRY.days} days; extend() later if needed"
            )
        if isolation not in ("snapshot", "serializable"):
            raise InvalidInputError("isolation must be 'snapshot' or 'serializable'")
        row, base = self._catalog.create_session(
            self._id,
            new_session_id(),
            branch,
            author or default_author(),
            isolation,
            expires_in.total_seconds(),
        )
        return _remember(Session(self, commit=row.base_commit, row=row, base=base, fresh=True))

    def session(self, session_id: str) -> Session:
        """Join an existing writable session (from any process) by id."""
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInputError("session id must be a non-empty string")
        key = (os.getpid(), self.config.key(), session_id)
        with _sessions_lock:
            s = _sessions.get(key)
        if s is not None:
            return s
        row = self._catalog.get_session(session_id)
        if row.repo_id != self._id:
            raise NotFoundError(f"session {session_id} belongs to another repo")
        if row.status == "committed" and row.commit_id:
            s = Session(self, commit=row.commit_id, branch=row.branch)
            return s
        return _remember(Session(self, commit=row.base_commit, row=row))

    def readonly_session(
        self,
        ref: str | None = None,
        *,
        branch: str | None = None,
        tag: str | None = None,
        commit: str | None = None,
        as_of: datetime | None = None,
    ) -> Session:
        """A read-only view of one commit: by ref, branch (its head now), tag, commit id, or the
        head a branch had at time ``as_of``."""
        given = [x for x in (ref, branch, tag, commit) if x is not None]
        if len(given) > 1:
            raise InvalidInputError("give at most one of ref, branch, tag, commit")
        if as_of is not None:
            if ref is not None or tag is not None or commit is not None:
                raise InvalidInputError("as_of goes with a branch name only")
            return Session(
                self, commit=self.commit_at(branch or "main", as_of), branch=branch or "main"
            )
        if tag is not None:
            found = self._catalog.get_ref(self._id, validate_name(tag, "tag name"))
            if found is None or found[0] != "tag":
                raise NotFoundError(f"no tag {tag!r}")
            return Session(self, commit=found[1])
        if branch is not None or (ref is None and commit is None):
            b = validate_name(branch or "main", "branch name")
            head = self._catalog.branch_head(self._id, b)
            if head is None:
                raise NotFoundError(f"no branch {b!r}; branches: {sorted(self.branches())}")
            return Session(self, commit=head.id, branch=b, base=head)
        return Session(self, commit=self.resolve(commit or ref or ""))

    def commit_at(self, branch: str, when: datetime) -> str:
        """The commit that was the head of ``branch`` at time ``when`` (naive times are UTC)."""
        validate_name(branch, "branch name")
        if not isinstance(when, datetime):
            raise InvalidInputError("as_of must be a datetime")
        ts = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
        found = self._catalog.ref_at(self._id, branch, ts)
        if found is None:
            raise NotFoundError(
                f"branch {branch!r} did not exist (or was deleted) at {when.isoformat()}"
            )
        return found

    def sessions(self, include_closed: bool = False) -> list[SessionInfo]:
        """Open sessions (with their expiry), oldest first."""
        return [
            SessionInfo(
                r.id,
                r.branch,
                r.base_commit,
                r.author,
                r.isolation,
                r.status,
                from_epoch(r.created_at),
                from_epoch(r.expires_at),
                r.commit_id,
            )
            for r in self._catalog.list_sessions(self._id, include_closed)
        ]

    # -- maintenance ---------------------------------------------------------------------------

    def gc(
        self,
        grace: timedelta = timedelta(hours=24),
        *,
        dry_run: bool = False,
        progress: bool | None = None,
    ) -> GCReport:
        """Delete chunk objects and catalog nodes that no commit, ref or open session reaches.

        Two-phase: a run marks what is unreachable now and deletes what was marked at least
        ``grace`` ago and is still unreachable, so run it periodically (``grace=0`` marks and
        deletes in one run). Safe while sessions write and deduplicate against the same
        objects, and safe to rerun after a crash. ``progress`` shows progress bars (default:
        when stderr is a terminal).
        """
        return maintenance.gc(self, grace, dry_run=dry_run, progress=progress)

    def expire(
        self,
        older_than: datetime | timedelta,
        *,
        keep_tags: bool = True,
        dry_run: bool = False,
    ) -> ExpireReport:
        """Drop commits older than a time (or a delay before now, by the catalog's clock) that
        no branch, tag or open session needs, so that ``gc`` can free their data.

        Branch heads and tagged commits are always kept; with ``keep_tags`` so is the whole
        history of every tag. The history of what is kept ends where expired commits begin.
        """
        return maintenance.expire(self, older_than, keep_tags=keep_tags, dry_run=dry_run)

    def fsck(self, *, verify: bool = False, progress: bool | None = None) -> FsckReport:
        """Check that every chunk object and catalog node a commit or open session references
        exists; with ``verify=True`` also read every object and check its hash."""
        return maintenance.fsck(self, verify=verify, progress=progress)

    def export(
        self,
        ref: str,
        target: Any,
        *,
        storage_options: dict[str, Any] | None = None,
        overwrite: bool = False,
        progress: bool | None = None,
    ) -> ExportReport:
        """Write a plain Zarr v3 copy of a commit to ``target``: a zarr store, a local path
        or an fsspec URL (``storage_options`` for the latter). The target must be empty unless
        ``overwrite`` (which clears it first)."""
        return maintenance.export(
            self,
            ref,
            target,
            storage_options=storage_options,
            overwrite=overwrite,
            progress=progress,
        )


_sessions: dict[tuple[Any, ...], Session] = {}
_sessions_lock = threading.Lock()


def _remember(session: Session) -> Session:
    """One Session object per process and id, so every store in a process shares its state."""
    key = (os.getpid(), session.repo.config.key(), session.id)
    with _sessions_lock:
        _sessions[key] = session
    return session


def _info(row: Any) -> CommitInfo:
    parents = tuple(p for p in (row.parent_id, row.merge_parent_id) if p)
    return CommitInfo(
        row.id, parents, row.author, row.message, row.meta, from_epoch(row.created_at)
    )
