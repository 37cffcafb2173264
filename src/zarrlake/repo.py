"""A repo: one versioned Zarr hierarchy, with its branches, tags, history and sessions."""

from __future__ import annotations

import getpass
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import zarrlake.history as history
import zarrlake.maintenance as maintenance
from zarrlake._optional import load
from zarrlake.catalog import Catalog
from zarrlake.core import RepoCore, create_core, open_core
from zarrlake.errors import (
    InvalidInputError,
    NotFoundError,
    RefMovedError,
)
from zarrlake.maintenance import ExpireReport, ExportReport, FsckReport, GCReport
from zarrlake.model import Root, Solver, content_hash
from zarrlake.model.diff import Diff
from zarrlake.objects.local import make_directory
from zarrlake.session import (
    DEFAULT_EXPIRY,
    MAX_EXPIRY,
    ReadonlySession,
    Session,
    WritableSession,
    join_session,
    start_session,
)
from zarrlake.types import (
    CommitInfo,
    Isolation,
    RefLogEntry,
    RepoConfig,
    SessionInfo,
    check_limit,
    from_epoch,
    new_commit_id,
    safe_url,
    to_timestamp,
    validate_name,
    validate_text,
)

__all__ = ["Repo", "RepoConfig"]

CATALOG_FILE = "catalog.db"


def default_author() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _author(author: object) -> str:
    return default_author() if author is None else validate_text(author, "author")


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

    def __init__(self, core: RepoCore) -> None:
        self._core = core
        self.config = core.config
        self.name = core.name
        self.storage = core.storage

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
            Check every chunk read against the CRC32C recorded in its ref, or its SHA-256
            for a chunk written before checksums (:class:`ChunkCorruptionError`).
        strict_metadata
            Refuse ``zarr.json`` documents that are not Zarr v3 metadata.
        """
        config, path = cls._config(
            location, catalog, name, storage_options, verify_reads, strict_metadata
        )
        if path is not None:
            make_directory(path)
            # relative to the catalog file's directory: the lake can be moved or copied whole
            storage_url = "."
        elif storage is None:
            raise InvalidInputError(
                "storage= is required with catalog= (e.g. 's3://bucket/prefix')"
            )
        else:
            storage_url = storage
            if "://" not in storage_url:
                storage_url = str(Path(storage_url).expanduser().absolute())
        data = Root().encode()
        core = create_core(
            config,
            storage_url,
            content_hash(data),
            data,
            new_commit_id(),
            _author(author),
        )
        return cls(core)

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
        return cls(open_core(config))

    @classmethod
    def open_or_create(cls, location: str | os.PathLike[str] | None = None, **kwargs: Any) -> Repo:
        """Open the repo if it exists, else create it."""
        open_kwargs = {k: v for k, v in kwargs.items() if k not in ("storage", "author")}
        try:
            return cls.open(location, **open_kwargs)
        except NotFoundError:
            return cls.create(location, **kwargs)

    @classmethod
    def from_config(cls, config: RepoConfig) -> Repo:
        """Open the repo a :class:`RepoConfig` describes (as ``repo.config`` gives it)."""
        if not isinstance(config, RepoConfig):
            raise InvalidInputError(f"expected a RepoConfig, got {type(config).__name__}")
        return cls(open_core(config))

    @property
    def _cat(self) -> Catalog:
        return self._core.catalog

    @property
    def _rid(self) -> int:
        return self._core.repo_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (Repo.from_config, (self.config,))

    def __repr__(self) -> str:
        return (
            f"<zarrlake.Repo {self.name!r} catalog={safe_url(self.config.catalog)} "
            f"storage={self.storage}>"
        )

    def _repr_html_(self) -> str:
        from zarrlake.display import repo_html

        return repo_html(self)

    def widget(self, ref: str | None = None) -> Any:
        """A Jupyter widget to browse branches and commits, with each commit's details and
        diff (chunk map included); ``widget.selected_dataset()`` opens the selected commit.
        Needs the ``ui`` extra."""
        return load("zarrlake.ui.widgets", "RepoBrowser", "ui")(self, ref)

    def dashboard(self, *, allow_writes: bool = False, token: str | None = None) -> Any:
        """The commit browser as a Panel viewer, shown inline in a notebook (``zarrlake ui``
        serves the same app). Needs the ``ui`` extra."""
        dashboard = load("zarrlake.ui.dashboard", "Dashboard", "ui")
        return dashboard(self, allow_writes=allow_writes, token=token)

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
        return history.resolve_ref(self._core, ref)

    def branches(self) -> dict[str, str]:
        """Branch name -> head commit id."""
        return self._cat.list_refs(self._rid, "branch")

    def tags(self) -> dict[str, str]:
        """Tag name -> commit id."""
        return self._cat.list_refs(self._rid, "tag")

    def create_branch(self, name: str, ref: str = "main", *, author: str | None = None) -> str:
        """Create a branch at ``ref`` (branch, tag, commit or ref expression); returns its
        commit id."""
        validate_name(name, "branch name")
        commit = self.resolve(ref)
        self._cat.create_ref(self._rid, name, "branch", commit, _author(author))
        return commit

    def delete_branch(self, name: str, *, author: str | None = None) -> str:
        """Delete a branch (its commits stay reachable from other refs); returns its last head."""
        validate_name(name, "branch name")
        return self._cat.delete_ref(self._rid, name, "branch", _author(author))

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
        current = self._cat.get_ref(self._rid, name)
        if current is None or current[0] != "branch":
            raise NotFoundError(f"no branch {name!r}")
        old = self.resolve(expected) if expected is not None else current[1]
        if not self._cat.move_branch(
            self._rid, name, old, target, _author(author), "reset", message
        ):
            now = self._cat.get_ref(self._rid, name)
            raise RefMovedError(
                f"branch {name!r} is not at {old[:10]} any more (someone moved it); "
                "read its head again and retry",
                ref=name,
                expected=old,
                actual=None if now is None else now[1],
            )
        return target

    def create_tag(self, name: str, ref: str = "main", *, author: str | None = None) -> str:
        """Create an immutable tag at ``ref``; returns its commit id."""
        validate_name(name, "tag name")
        commit = self.resolve(ref)
        self._cat.create_ref(self._rid, name, "tag", commit, _author(author))
        return commit

    def delete_tag(self, name: str, *, author: str | None = None) -> str:
        """Delete a tag (recorded in the ref log); returns the commit it pointed to."""
        validate_name(name, "tag name")
        return self._cat.delete_ref(self._rid, name, "tag", _author(author))

    def reflog(self, name: str, limit: int | None = None) -> list[RefLogEntry]:
        """Every move of a branch or tag, newest first."""
        validate_name(name, "ref name")
        return [
            RefLogEntry(
                r.name, r.action, r.old_commit, r.new_commit, r.author, from_epoch(r.at), r.message
            )
            for r in self._cat.reflog(self._rid, name, check_limit(limit))
        ]

    # -- history -------------------------------------------------------------------------------

    def commit_info(self, ref: str) -> CommitInfo:
        row = self._cat.get_commit(self._rid, self.resolve(ref))
        return _info(row)

    def log(self, ref: str = "main", limit: int | None = None) -> list[CommitInfo]:
        """Commits reachable from ``ref`` by first parents, newest first."""
        limit = check_limit(limit)
        return [_info(r) for r in self._cat.ancestry(self._rid, self.resolve(ref), limit)]

    def diff(self, a: str, b: str) -> Diff:
        """What changed from ref ``a`` to ref ``b``: nodes added, removed and modified,
        metadata field by field, and per array the chunk coordinates added, changed and
        removed. Unchanged manifest shards are never loaded."""
        return history.diff(self._core, a, b)

    def merge(
        self,
        source: str,
        branch: str = "main",
        *,
        solver: Solver = "fail",
        message: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        fast_forward: bool = True,
        timeout: float = 120.0,
    ) -> str:
        """Merge ref ``source`` into ``branch``; returns the branch's new head.

        A fast-forward when ``branch`` is an ancestor of ``source`` (unless
        ``fast_forward=False``); nothing when ``source`` is already merged; otherwise a
        three-way merge at chunk level against the common ancestor, recorded as a commit with
        two parents. Conflicts (the same rules as commits) raise :class:`ConflictError`, or
        are resolved by ``solver="ours"`` (``branch`` keeps its version) or ``"theirs"``
        (``source``'s version wins).
        """
        return history.merge(
            self._core,
            source,
            branch,
            solver=solver,
            message=message,
            author=_author(author),
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
            self._core,
            commit,
            branch,
            message=message,
            author=_author(author),
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
    ) -> WritableSession:
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
        return start_session(self._core, branch, _author(author), isolation, expires_in)

    def session(self, session_id: str) -> Session:
        """Join an existing writable session (from any process) by id. A session that was
        committed meanwhile opens read-only at its commit."""
        return join_session(self._core, session_id)

    def readonly_session(
        self,
        ref: str | None = None,
        *,
        branch: str | None = None,
        tag: str | None = None,
        commit: str | None = None,
        as_of: datetime | None = None,
    ) -> ReadonlySession:
        """A read-only view of one commit: by ref, branch (its head now), tag, commit id, or the
        head a branch had at time ``as_of``."""
        given = [x for x in (ref, branch, tag, commit) if x is not None]
        if len(given) > 1:
            raise InvalidInputError("give at most one of ref, branch, tag, commit")
        if as_of is not None:
            if ref is not None or tag is not None or commit is not None:
                raise InvalidInputError("as_of goes with a branch name only")
            b = branch or "main"
            return ReadonlySession(self._core, self.commit_at(b, as_of), branch=b)
        if tag is not None:
            found = self._cat.get_ref(self._rid, validate_name(tag, "tag name"))
            if found is None or found[0] != "tag":
                raise NotFoundError(f"no tag {tag!r}")
            return ReadonlySession(self._core, found[1])
        if branch is not None or (ref is None and commit is None):
            b = validate_name(branch or "main", "branch name")
            head = self._cat.branch_head(self._rid, b)
            if head is None:
                raise NotFoundError(f"no branch {b!r}; branches: {sorted(self.branches())}")
            return ReadonlySession(self._core, head.id, branch=b, base=head)
        return ReadonlySession(self._core, self.resolve(commit or ref or ""))

    def commit_at(self, branch: str, when: datetime) -> str:
        """The commit that was the head of ``branch`` at time ``when`` (naive times are UTC)."""
        validate_name(branch, "branch name")
        ts = to_timestamp(when, "as_of")
        found = self._cat.ref_at(self._rid, branch, ts)
        if found is None:
            raise NotFoundError(
                f"branch {branch!r} did not exist (or was deleted) at {when.isoformat()}"
            )
        return found

    def sessions(self, include_closed: bool = False) -> list[SessionInfo]:
        """Open sessions (with their expiry), oldest first."""
        return [r.info() for r in self._cat.list_sessions(self._rid, include_closed)]

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
        return maintenance.gc(self._core, grace, dry_run=dry_run, progress=progress)

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
        return maintenance.expire(self._core, older_than, keep_tags=keep_tags, dry_run=dry_run)

    def fsck(self, *, verify: bool = False, progress: bool | None = None) -> FsckReport:
        """Check that every chunk object and catalog node a commit or open session references
        exists; with ``verify=True`` also read every object and check its hash."""
        return maintenance.fsck(self._core, verify=verify, progress=progress)

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
            self._core,
            self.resolve(ref),
            target,
            storage_options=storage_options,
            overwrite=overwrite,
            progress=progress,
        )


def _info(row: Any) -> CommitInfo:
    parents = tuple(p for p in (row.parent_id, row.merge_parent_id) if p)
    return CommitInfo(
        row.id, parents, row.author, row.message, row.meta, from_epoch(row.created_at)
    )
